//go:build !unix

package bundle

import "os"

// readBundleFile reads the file at path.
func readBundleFile(path string) (data []byte, release func(), err error) {
	data, err = os.ReadFile(path)
	return data, func() {}, err
}
