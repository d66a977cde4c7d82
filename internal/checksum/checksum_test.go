package checksum

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sum of "abc" from FIPS 180-2.
const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

func TestVerify(t *testing.T) {
	tests := []struct {
		name, want string
		err        error
	}{
		{"match", abc, nil},
		{"match in upper case", strings.ToUpper(abc), nil},
		{"other sum", strings.Repeat("ab", 32), ErrMismatch},
		{"too short", abc[:62], ErrMalformed},
		{"too long", abc + "00", ErrMalformed},
		{"not hex", strings.Repeat("g", 64), ErrMalformed},
		{"empty", "", ErrMalformed},
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Verify([]byte("abc"), tt.want); !errors.Is(err, tt.err) {
				t.Fatalf("Verify = %v, want %v", err, tt.err)
			}
			if err := VerifyFile(path, tt.want); !errors.Is(err, tt.err) {
				t.Fatalf("VerifyFile = %v, want %v", err, tt.err)
			}
		})
	}
	var m *MismatchError
	if err := Verify([]byte("abd"), abc); !errors.As(err, &m) || !strings.Contains(err.Error(), abc) {
		t.Fatalf("mismatch error %v should carry both sums", err)
	}
	if err := VerifyFile(filepath.Join(dir, "missing"), abc); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if Sum([]byte("abc")) != abc {
		t.Fatalf("Sum = %s", Sum([]byte("abc")))
	}
}
