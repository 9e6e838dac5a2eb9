package stream

import (
	"encoding/binary"
	"math/bits"
)

// xxh3Secret is XXH3's default secret (kSecret).
var xxh3Secret = [192]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

const (
	prime32_1 = 0x9E3779B1
	prime32_2 = 0x85EBCA77
	prime32_3 = 0xC2B2AE3D
	prime64_1 = 0x9E3779B185EBCA87
	prime64_2 = 0xC2B2AE3D27D4EB4F
	prime64_3 = 0x165667B19E3779F9
	prime64_4 = 0x85EBCA77C2B2AE63
	prime64_5 = 0x27D4EB2F165667C5
)

func le64(b []byte, o int) uint64 { return binary.LittleEndian.Uint64(b[o:]) }
func le32(b []byte, o int) uint32 { return binary.LittleEndian.Uint32(b[o:]) }
func le64k(o int) uint64          { return le64(xxh3Secret[:], o) }

func mulFold(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

func xxh64Avalanche(h uint64) uint64 {
	h ^= h >> 33
	h *= prime64_2
	h ^= h >> 29
	h *= prime64_3
	return h ^ h>>32
}

func xxh3Avalanche(h uint64) uint64 {
	h ^= h >> 37
	h *= 0x165667919E3779F9
	return h ^ h>>32
}

// mix32 folds the 16 bytes at a and the 16 at b into lo and hi, keyed by
// the 32 bytes of the secret at k.
func mix32(lo, hi uint64, a, b []byte, k int) (uint64, uint64) {
	a0, a1, b0, b1 := le64(a, 0), le64(a, 8), le64(b, 0), le64(b, 8)
	lo += mulFold(a0^le64k(k), a1^le64k(k+8))
	hi += mulFold(b0^le64k(k+16), b1^le64k(k+24))
	return lo ^ (b0 + b1), hi ^ (a0 + a1)
}

// xxh3Hash128 is XXH3-128 of b with seed 0 and the default secret, as its
// low and high halves.
func xxh3Hash128(b []byte) (lo, hi uint64) {
	n, l := len(b), uint64(len(b))
	switch {
	case n == 0:
		return xxh64Avalanche(le64k(64) ^ le64k(72)), xxh64Avalanche(le64k(80) ^ le64k(88))
	case n <= 3:
		c := uint32(b[0])<<16 | uint32(b[n/2])<<24 | uint32(b[n-1]) | uint32(n)<<8
		k := xxh3Secret[:]
		return xxh64Avalanche(uint64(c ^ le32(k, 0) ^ le32(k, 4))),
			xxh64Avalanche(uint64(bits.RotateLeft32(bits.ReverseBytes32(c), 13) ^ le32(k, 8) ^ le32(k, 12)))
	case n <= 8:
		x := uint64(le32(b, 0)) | uint64(le32(b, n-4))<<32
		hi, lo = bits.Mul64(x^le64k(16)^le64k(24), prime64_1+l<<2)
		hi += lo << 1
		lo ^= hi >> 3
		lo ^= lo >> 35
		lo *= 0x9FB21C651E98DF25
		return lo ^ lo>>28, xxh3Avalanche(hi)
	case n <= 16:
		x, y := le64(b, 0), le64(b, n-8)
		mh, ml := bits.Mul64(x^y^le64k(32)^le64k(40), prime64_1)
		ml += (l - 1) << 54
		y ^= le64k(48) ^ le64k(56)
		mh += y + uint64(uint32(y))*(prime32_2-1)
		hi, lo = bits.Mul64(ml^bits.ReverseBytes64(mh), prime64_2)
		return xxh3Avalanche(lo), xxh3Avalanche(hi + mh*prime64_2)
	case n <= 128:
		lo = l * prime64_1
		for i := (n - 1) / 32; i >= 0; i-- {
			lo, hi = mix32(lo, hi, b[16*i:], b[n-16*(i+1):], 32*i)
		}
	case n <= 240:
		lo = l * prime64_1
		for i := range 4 {
			lo, hi = mix32(lo, hi, b[32*i:], b[32*i+16:], 32*i)
		}
		lo, hi = xxh3Avalanche(lo), xxh3Avalanche(hi)
		for i := 4; i < n/32; i++ {
			lo, hi = mix32(lo, hi, b[32*i:], b[32*i+16:], 32*i-125)
		}
		lo, hi = mix32(lo, hi, b[n-16:], b[n-32:], 103)
	default:
		return xxh3Long(b)
	}
	return xxh3Avalanche(lo + hi), -xxh3Avalanche(lo*prime64_1 + hi*prime64_4 + l*prime64_2)
}

// xxh3Long is xxh3Hash128 of more than 240 bytes: 64-byte stripes into
// eight accumulators, scrambled after every 16 (a 1 KiB block), the last
// 64 bytes as a stripe of their own, then the accumulators merged.
func xxh3Long(b []byte) (lo, hi uint64) {
	acc := [8]uint64{prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1}
	stripe := func(in []byte, k int) {
		for i := range acc {
			v := le64(in, 8*i)
			x := v ^ le64k(k+8*i)
			acc[i^1] += v
			acc[i] += uint64(uint32(x)) * (x >> 32)
		}
	}
	n := len(b)
	for s := range (n - 1) / 64 {
		stripe(b[64*s:], 8*(s%16))
		if s%16 == 15 {
			for i := range acc {
				acc[i] = (acc[i] ^ acc[i]>>47 ^ le64k(128+8*i)) * prime32_1
			}
		}
	}
	stripe(b[n-64:], 121)
	lo, hi = uint64(n)*prime64_1, ^(uint64(n) * prime64_2)
	for i := 0; i < 8; i += 2 {
		lo += mulFold(acc[i]^le64k(11+8*i), acc[i+1]^le64k(19+8*i))
		hi += mulFold(acc[i]^le64k(117+8*i), acc[i+1]^le64k(125+8*i))
	}
	return xxh3Avalanche(lo), xxh3Avalanche(hi)
}
