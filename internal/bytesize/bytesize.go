// Package bytesize writes byte counts as idmpctl shows memory everywhere
// (calc-ttl, calc-maxsize, inspect --memory, inspect --server): in binary
// units, the ones Redis itself reads sizes in (maxmemory 1gb is
// 1,073,741,824 bytes, so it reads back as "1.0 GiB", never "1.07 GB").
// Pure: no Redis, no output.
package bytesize

import "fmt"

var units = []struct {
	name  string
	shift uint
}{{"EiB", 60}, {"PiB", 50}, {"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}}

// Format is n in the largest binary unit it fills, to one decimal: "512 B",
// "1.5 KiB", "3.2 MiB", "1.0 GiB", "8.0 EiB".
func Format(n int64) string {
	for _, u := range units {
		if n >= 1<<u.shift || n <= -(1<<u.shift) {
			return fmt.Sprintf("%.1f %s", float64(n)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
