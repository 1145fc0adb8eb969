package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
)

// File is one file a release archive carries besides the binary (README, licence), by its name in the archive.
type File struct {
	Name string
	Data []byte
}

// WriteArchive writes the tar.gz of version v for t to w: a directory astrabox_<v>_<os>_<arch>/ holding the
// executable astrabox and the extra files.
func WriteArchive(w io.Writer, v string, t Target, binary []byte, extra []File) error {
	dir := fmt.Sprintf("%s_%s_%s/", BinaryName, v, t)
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return fmt.Errorf("archive %s: %w", t, err)
	}
	zw.ModTime = epoch
	tw := tar.NewWriter(zw)
	hdr := func(name string, mode int64, size int, typ byte) *tar.Header {
		return &tar.Header{Name: name, Mode: mode, Size: int64(size), Typeflag: typ, ModTime: epoch,
			Uname: "root", Gname: "root", Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(hdr(dir, 0o755, 0, tar.TypeDir)); err != nil {
		return fmt.Errorf("archive %s: %w", t, err)
	}
	files := append([]File{{Name: BinaryName, Data: binary}}, extra...)
	for i, f := range files {
		mode := int64(0o644)
		if i == 0 {
			mode = 0o755
		}
		if err := tw.WriteHeader(hdr(dir+f.Name, mode, len(f.Data), tar.TypeReg)); err != nil {
			return fmt.Errorf("archive %s: %w", t, err)
		}
		if _, err := io.Copy(tw, bytes.NewReader(f.Data)); err != nil {
			return fmt.Errorf("archive %s: %w", t, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive %s: %w", t, err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("archive %s: %w", t, err)
	}
	return nil
}
