# Runs Redis's own IDMP tests through idmpctl exec, in one of two ways:
#
#   # on servers of its own (every test can run: restarts, DEBUG RELOAD,
#   # AOF rewrites, a replica), started from this redis-server binary:
#   IDMP_SUITE_SERVER=/path/to/redis-server IDMPCTL_BIN=./idmpctl \
#     tclsh scripts/redis-idmp-suite.tcl path/to/redis/tests/unit/type/stream.tcl
#
#   # against a server it did not start (tests tagged external:skip or
#   # needs:debug are skipped, as Redis's own harness skips them there):
#   IDMPCTL_URL=redis://127.0.0.1:6379/9 IDMPCTL_BIN=./idmpctl \
#     tclsh scripts/redis-idmp-suite.tcl path/to/redis/tests/unit/type/stream.tcl
#
# A minimal stand-in for Redis's test framework: `r` sends each command,
# every byte quoted as \xNN, to one `idmpctl exec -o json` process and
# reads its one reply line (a conversation over pipes; redis_client starts
# another process), so MULTI/EXEC and concurrent clients are real. Only the
# tests whose names match IDMP_SUITE_FILTER run (default: the IDMP ones).
# IDMP_SUITE_EXEC_ARGS are more arguments of every exec (--mode emulated);
# IDMP_SUITE_SKIP is a regular expression of test names to skip (tests that
# need a server feature the server lacks). The servers' keys are not
# flushed between tests: each test deletes its own, as in Redis.
#
# Each test prints "[ok]: name", "[err]: name" and why, or "[skip]: name
# (why)"; the last line counts them. The exit status is 1 when one failed.
set ::passed 0; set ::failed 0; set ::skipped 0; set ::failures {}
set ::bin $::env(IDMPCTL_BIN)
set ::filter {IDMP|XCFGSET|pids-tracked|iids}
if {[info exists ::env(IDMP_SUITE_FILTER)]} { set ::filter $::env(IDMP_SUITE_FILTER) }
set ::skip_re ""
if {[info exists ::env(IDMP_SUITE_SKIP)]} { set ::skip_re $::env(IDMP_SUITE_SKIP) }
set ::exec_args {}
if {[info exists ::env(IDMP_SUITE_EXEC_ARGS)]} { set ::exec_args $::env(IDMP_SUITE_EXEC_ARGS) }
set ::server_bin ""
if {[info exists ::env(IDMP_SUITE_SERVER)]} { set ::server_bin $::env(IDMP_SUITE_SERVER) }
set ::owned [expr {$::server_bin ne ""}]

# Strings that came as {"b64": ...} (not UTF-8, a DUMP payload): sent back
# as the same bytes, not as UTF-8 of their characters.
array set ::binary {}

proc json_parse {s} { set ::jp_s $s; set ::jp_i 0; return [jp_value] }
proc jp_ws {} { while {$::jp_i < [string length $::jp_s] && [string is space [string index $::jp_s $::jp_i]]} {incr ::jp_i} }
proc jp_value {} {
    jp_ws
    set c [string index $::jp_s $::jp_i]
    switch -- $c {
        "\{" {
            incr ::jp_i; set out {}; jp_ws
            if {[string index $::jp_s $::jp_i] eq "\}"} {incr ::jp_i; return $out}
            while 1 {
                jp_ws; set k [jp_string]; jp_ws; incr ::jp_i ;# :
                set v [jp_value]
                if {$k eq "b64" && [llength $out] == 0} { set b64 $v }
                lappend out $k $v; jp_ws
                set c [string index $::jp_s $::jp_i]; incr ::jp_i
                if {$c eq "\}"} break
            }
            if {[llength $out] == 2 && [info exists b64]} {
                set bytes [binary decode base64 $b64]
                set ::binary($bytes) 1
                return $bytes
            }
            return [list __obj $out]
        }
        "\[" {
            incr ::jp_i; set out {}; jp_ws
            if {[string index $::jp_s $::jp_i] eq "\]"} {incr ::jp_i; return $out}
            while 1 {
                lappend out [unobj [jp_value]]; jp_ws
                set c [string index $::jp_s $::jp_i]; incr ::jp_i
                if {$c eq "\]"} break
            }
            return $out
        }
        "\"" { return [jp_string] }
        "n" { incr ::jp_i 4; return "" }
        "t" { incr ::jp_i 4; return 1 }
        "f" { incr ::jp_i 5; return 0 }
        default {
            regexp -start $::jp_i -- {-?[0-9.eE+-]+} $::jp_s num
            incr ::jp_i [string length $num]; return $num
        }
    }
}
# A string that is not a Tcl list (a DUMP payload with a quote or a brace
# in it) is a value, never an object.
proc unobj {v} { if {[string is list $v] && [llength $v] == 2 && [lindex $v 0] eq "__obj"} { set o {}; foreach {k x} [lindex $v 1] {lappend o $k [unobj $x]}; return $o }; return $v }
proc jp_string {} {
    incr ::jp_i ;# opening quote
    set out ""
    while 1 {
        set c [string index $::jp_s $::jp_i]; incr ::jp_i
        if {$c eq "\""} break
        if {$c eq "\\"} {
            set e [string index $::jp_s $::jp_i]; incr ::jp_i
            switch -- $e {
                n {append out "\n"} t {append out "\t"} r {append out "\r"} b {append out "\b"} f {append out "\f"}
                u { set h [string range $::jp_s $::jp_i [expr {$::jp_i+3}]]; incr ::jp_i 4; append out [format %c [scan $h %x]] }
                default {append out $e}
            }
        } else { append out $c }
    }
    return $out
}

# A command as one line: every byte of every argument as \xNN in quotes.
proc encode_line {argv} {
    set parts {}
    foreach a $argv {
        if {[info exists ::binary($a)]} {
            binary scan $a H* hex
        } else {
            binary scan [encoding convertto utf-8 $a] H* hex
        }
        lappend parts "\"[regsub -all {(..)} $hex {\\x\1}]\""
    }
    return [join $parts " "]
}

proc new_client {url} {
    set fd [open [list |$::bin exec --url $url -o json {*}$::exec_args 2>@stderr] r+]
    fconfigure $fd -buffering line -encoding utf-8 -translation lf
    return $fd
}
proc client_call {fd argv} {
    if {[string tolower [lindex $argv 0]] eq "close"} { catch {close $fd}; return }
    puts $fd [encode_line $argv]
    flush $fd
    if {[gets $fd line] < 0} { error "idmpctl exec ended" }
    if {[string match {\{"error":*} $line]} {
        error [lindex [unobj [json_parse $line]] 1]
    }
    set v [json_parse $line]
    set cmd [string toupper [lindex $argv 0]]
    if {[string is list $v] && [llength $v] == 2 && [lindex $v 0] eq "__obj"} {
        if {$cmd in {XREAD XREADGROUP}} {
            set o {}; foreach {k x} [lindex $v 1] {lappend o [list $k [unobj $x]]}; return $o
        }
        return [unobj $v]
    }
    return $v
}

# Clients: a proc per exec process, named clientN.
set ::nclients 0
proc client_for {url} {
    set name "client[incr ::nclients]"
    set fd [new_client $url]
    proc $name {args} "client_call $fd \$args"
    return $name
}

# Servers: ::servers is the stack of start_server blocks, each a dict of
# host, port, client, pid, dir and the server's arguments; `r` and
# redis_client talk to the innermost (level 0), DB 9 as in Redis's tests.
set ::servers {}
if {!$::owned} {
    set ::url $::env(IDMPCTL_URL)
    lappend ::servers [dict create host "" port "" client [client_for $::url] url $::url]
}
proc srv {args} {
    set level 0
    if {[string is integer [lindex $args 0]]} { set level [lindex $args 0]; set args [lrange $args 1 end] }
    return [dict get [lindex $::servers end+$level] [lindex $args 0]]
}
proc r {args} { [srv 0 client] {*}$args }
proc redis_client {{level 0}} { return [client_for [srv $level url]] }

proc free_port {} {
    set s [socket -server {apply {{c a p} {close $c}}} -myaddr 127.0.0.1 0]
    set port [lindex [fconfigure $s -sockname] 2]
    close $s
    return $port
}
# Waits until the server on port answers PING (not LOADING).
proc wait_ready {port pid} {
    for {set i 0} {$i < 1000} {incr i} {
        if {![catch {socket 127.0.0.1 $port} fd]} {
            fconfigure $fd -translation binary -buffering none
            catch {puts -nonewline $fd "PING\r\n"; flush $fd; gets $fd line} 
            catch {close $fd}
            if {[info exists line] && [string match "+PONG*" $line]} return
        }
        if {[catch {exec kill -0 $pid}]} { error "redis-server on port $port exited" }
        after 20
    }
    error "redis-server on port $port did not start"
}
proc launch {srv} {
    set args [dict get $srv args]
    set log [file join [dict get $srv dir] stdout]
    set pid [exec $::server_bin {*}$args >>& $log &]
    wait_ready [dict get $srv port] $pid
    dict set srv pid $pid
    dict set srv client [client_for [dict get $srv url]]
    return $srv
}
proc stop {srv} {
    catch {[dict get $srv client] close}
    set pid [dict get $srv pid]
    catch {exec kill $pid}
    for {set i 0} {$i < 500 && ![catch {exec kill -0 $pid}]} {incr i} { after 10 }
    catch {exec kill -9 $pid}
}
proc restart_server {level wait_ready rotate_logs {reconnect 1} {shutdown sigterm}} {
    set srv [lindex $::servers end+$level]
    stop $srv
    lset ::servers end+$level [launch $srv]
}

# Tags: a stack, of start_server and tags blocks; a test has them all.
set ::tags {}
proc with_tags {t body} {
    set saved $::tags
    lappend ::tags {*}$t
    set code [catch {uplevel 2 $body} res opts]
    set ::tags $saved
    return -options $opts $res
}
proc tags {t body} { with_tags $t $body }

proc skip_reason {name tags} {
    if {$::skip_re ne "" && [regexp -- $::skip_re $name]} { return "IDMP_SUITE_SKIP" }
    if {!$::owned} {
        foreach t {external:skip needs:debug} { if {$t in $tags} { return $t } }
    }
    return ""
}
# The names of the tests in a block's source that the filter selects,
# their variables expanded in the caller's scope (level).
proc block_tests {body level} {
    set out {}
    foreach {_ name} [regexp -all -inline -line {^\s*test\s+[\{"]([^\}"]*)[\}"]} $body] {
        catch {set name [uplevel [expr {$level + 1}] [list subst -nocommands $name]]}
        if {[regexp -nocase -- $::filter $name]} { lappend out $name }
    }
    return $out
}
# Whether a block holds a test that would run: a block without one starts
# no server and runs nothing (its tests are reported skipped).
proc block_runs {body level} {
    set skips {}
    foreach name [block_tests $body [expr {$level + 1}]] {
        set why [skip_reason $name $::tags]
        if {$why eq ""} { return 1 }
        lappend skips $name $why
    }
    foreach {name why} $skips { incr ::skipped; puts "\[skip\]: $name ($why)" }
    return 0
}
proc start_server {opts body} {
    set t {}; set overrides {}
    if {[dict exists $opts tags]} { set t [dict get $opts tags] }
    if {[dict exists $opts overrides]} { set overrides [dict get $opts overrides] }
    if {!$::owned} { return [with_tags $t $body] }
    set saved $::tags
    lappend ::tags {*}$t
    if {![block_runs $body 1]} { set ::tags $saved; return }
    set port [free_port]
    set dir [file join $::workdir "server$port"]
    file mkdir $dir
    set args [list --port $port --bind 127.0.0.1 --dir $dir --save "" --appendonly no \
        --enable-debug-command yes --daemonize no]
    foreach {k v} $overrides { lappend args --$k $v }
    set srv [dict create host 127.0.0.1 port $port dir $dir args $args url "redis://127.0.0.1:$port/9"]
    lappend ::servers [launch $srv]
    set code [catch {uplevel 1 $body} res]
    stop [lindex $::servers end]
    set ::servers [lrange $::servers 0 end-1]
    set ::tags $saved
    if {$code == 1} {
        incr ::failed; lappend ::failures "(server block)"
        puts "\[err\]: (a start_server block, outside its tests)\n    $res"
    }
}
if {$::owned} {
    set ::workdir [file join [expr {[info exists ::env(TMPDIR)] ? $::env(TMPDIR) : "/tmp"}] "idmp-suite-[pid]"]
    file mkdir $::workdir
}

# Redis's helpers the tests use.
proc fail {msg} { error "assertion:$msg" }
proc assert_equal {a b {detail ""}} { if {$a ne $b} { error "assertion:Expected '$a' to be equal to '$b' $detail" } }
proc assert_not_equal {a b {detail ""}} { if {$a eq $b} { error "assertion:Expected '$a' to be not equal to '$b' $detail" } }
proc assert_match {p v {detail ""}} { if {![string match $p $v]} { error "assertion:Expected '$v' to match '$p' $detail" } }
proc assert_morethan {a b {detail ""}} { if {!($a > $b)} { error "assertion:Expected '$a' to be more than '$b' $detail" } }
proc assert_lessthan {a b {detail ""}} { if {!($a < $b)} { error "assertion:Expected '$a' to be less than '$b' $detail" } }
proc assert {cond} { if {![uplevel 1 [list expr $cond]]} { error "assertion:Expected '$cond' to be true" } }
proc assert_error {pattern code {detail ""}} {
    if {[catch {uplevel 1 $code} e]} {
        if {![string match $pattern $e]} { error "assertion:Expected an error matching '$pattern' but got '$e'" }
    } else { error "assertion:Expected an error but nothing was caught" }
}
proc wait_for_condition {maxtries delay e _else_ elsescript} {
    while {[incr maxtries -1] >= 0} {
        set errcode [catch {uplevel 1 [list expr $e]} result]
        if {$errcode == 0} {
            if {$result} break
        } else {
            return -code $errcode $result
        }
        after $delay
    }
    if {$maxtries == -1} {
        set errcode [catch {uplevel 1 $elsescript} result]
        return -code $errcode $result
    }
}
proc getInfoProperty {infostr property} {
    if {[regexp -lineanchor "^$property:(.*?)\r?\$" $infostr _ value]} { return $value }
}
proc status {r property} { return [getInfoProperty [{*}$r info] $property] }
proc s {args} {
    set level 0
    if {[string is integer [lindex $args 0]]} { set level [lindex $args 0]; set args [lrange $args 1 end] }
    status [srv $level client] [lindex $args 0]
}
proc waitForBgrewriteaof {r} {
    while {[status $r aof_rewrite_in_progress] eq 1} { after 50 }
}
proc waitForBgsave {r} {
    while {[status $r rdb_bgsave_in_progress] eq 1} { after 50 }
}

proc test {name body {expected ""} {tags ""}} {
    if {![regexp -nocase -- $::filter $name]} return
    set why [skip_reason $name [concat $::tags $tags]]
    if {$why ne ""} { incr ::skipped; puts "\[skip\]: $name ($why)"; return }
    if {[catch {uplevel 1 $body} e]} {
        incr ::failed; lappend ::failures $name; puts "\[err\]: $name\n    $e"
    } elseif {$expected ne "" && ![string match $expected $e]} {
        incr ::failed; lappend ::failures $name; puts "\[err\]: $name\n    got '$e', want '$expected'"
    } else { incr ::passed; puts "\[ok\]: $name" }
}

set code [catch {source [lindex $argv 0]} e]
if {$code == 1} { incr ::failed; puts "\[err\]: (the test file)\n    $e" }
foreach srv [lreverse $::servers] { if {$::owned} { stop $srv } }
if {$::owned} { file delete -force $::workdir }
puts "\n$::passed passed, $::failed failed, $::skipped skipped"
exit [expr {$::failed > 0}]
