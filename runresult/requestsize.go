package runresult

import "math"

// typicalRequestBytes is what one request adds to requests.csv and
// requests.arrow together in practice: 268 bytes a request in a replay of
// testdata/traces/splitwise_conv.csv (19,366 requests, llama-3.1-8b on one
// H100: 150 bytes of CSV, 118 of Arrow); runs of fixed:256x32 write about
// the same.
const typicalRequestBytes = 268

// arrowRowBytes is what every row adds to requests.arrow whatever its
// values: 5 Int64 and 8 Float64 columns (a null still takes its 8 bytes),
// the status string's 4-byte offset and at least 8 bytes ("rejected").
const arrowRowBytes = 5*8 + 8*8 + 4 + 8

// csvRowBytes is what every row adds to requests.csv whatever its values,
// besides the digits of its request id: 13 commas, the newline, a status
// of at least 8 bytes and one digit at least for each of the 4 counts.
const csvRowBytes = 13 + 1 + 8 + 4

// RequestFilesBytes estimates the size of requests.csv and requests.arrow
// for n requests: atLeast is what they must hold whatever the requests'
// values (so a disk with less room cannot take them), typical what runs
// write in practice (typicalRequestBytes a request).
func RequestFilesBytes(n int) (atLeast, typical uint64) {
	if n <= 0 {
		return 0, 0
	}
	digits := uint64(0) // of the request ids 0..n-1
	for d, lo := uint64(1), 0; lo < n; d++ {
		hi := n // the ids of d digits are lo..min(n, 10^d)-1
		if lo <= (math.MaxInt-9)/10 && max(10, lo*10) < n {
			hi = max(10, lo*10)
		}
		digits += d * uint64(hi-lo)
		lo = hi
	}
	return uint64(n)*(arrowRowBytes+csvRowBytes) + digits, uint64(n) * typicalRequestBytes
}
