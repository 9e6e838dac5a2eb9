# Runs Redis's own IDMP tests through idmpctl exec:
#
#   IDMPCTL_URL=redis://127.0.0.1:6379/0 IDMPCTL_BIN=./idmpctl \
#     tclsh scripts/redis-idmp-suite.tcl path/to/redis/tests/unit/type/stream.tcl
#
# A minimal stand-in for Redis's test framework: `r` sends each command,
# every byte quoted as \xNN, to one `idmpctl exec -o json` process and
# reads its one reply line (a conversation over pipes; redis_client starts
# another process), so MULTI/EXEC and concurrent clients are real. Only the
# tests whose names match IDMP_SUITE_FILTER run (default: the IDMP ones);
# those tagged external:skip or needs:debug are skipped, as against any
# server the suite did not start (they restart it or need DEBUG). The
# server's keys are not flushed: each test deletes its own, as in Redis.
set ::passed 0; set ::failed 0; set ::skipped 0; set ::failures {}
set ::bin $::env(IDMPCTL_BIN)
set ::filter {IDMP|XCFGSET|pids-tracked|iids}
if {[info exists ::env(IDMP_SUITE_FILTER)]} { set ::filter $::env(IDMP_SUITE_FILTER) }

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
            if {[llength $out] == 2 && [info exists b64]} { return [encoding convertfrom utf-8 [binary decode base64 $b64]] }
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
proc unobj {v} { if {[llength $v] == 2 && [lindex $v 0] eq "__obj"} { set o {}; foreach {k x} [lindex $v 1] {lappend o $k [unobj $x]}; return $o }; return $v }
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
        binary scan [encoding convertto utf-8 $a] H* hex
        lappend parts "\"[regsub -all {(..)} $hex {\\x\1}]\""
    }
    return [join $parts " "]
}

proc new_client {} {
    set fd [open "|$::bin exec -o json 2>@stderr" r+]
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
    if {[llength $v] == 2 && [lindex $v 0] eq "__obj"} {
        if {$cmd in {XREAD XREADGROUP}} {
            set o {}; foreach {k x} [lindex $v 1] {lappend o [list $k [unobj $x]]}; return $o
        }
        return [unobj $v]
    }
    return $v
}
set ::r [new_client]
proc r {args} { client_call $::r $args }
set ::nclients 0
proc redis_client {} {
    set name "client[incr ::nclients]"
    set fd [new_client]
    proc $name {args} "client_call $fd \$args"
    return $name
}

proc assert_equal {a b {detail ""}} { if {$a ne $b} { error "assertion:Expected '$b' to be equal to '$a'" } }
proc assert_match {p v} { if {![string match $p $v]} { error "assertion:Expected '$v' to match '$p'" } }
proc assert {cond} { if {![uplevel 1 [list expr $cond]]} { error "assertion:Expected '$cond' to be true" } }
proc assert_error {pattern code} {
    if {[catch {uplevel 1 $code} e]} {
        if {![string match $pattern $e]} { error "assertion:Expected an error matching '$pattern' but got '$e'" }
    } else { error "assertion:Expected an error but nothing was caught" }
}
proc start_server {opts body} { uplevel 1 $body }
proc tags {t body} { uplevel 1 $body }
proc test {name body {expected ""} {tags ""}} {
    if {![regexp -nocase -- $::filter $name]} return
    foreach t {external:skip needs:debug} {
        if {$t in $tags} { incr ::skipped; puts "\[skip\]: $name ($t)"; return }
    }
    if {[catch {uplevel 1 $body} e]} {
        incr ::failed; lappend ::failures $name; puts "\[err\]: $name\n    $e"
    } elseif {$expected ne "" && ![string match $expected $e]} {
        incr ::failed; lappend ::failures $name; puts "\[err\]: $name\n    got '$e', want '$expected'"
    } else { incr ::passed; puts "\[ok\]: $name" }
}

source [lindex $argv 0]
puts "\n$::passed passed, $::failed failed, $::skipped skipped"
exit [expr {$::failed > 0}]
