package wire_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire/wiregen"
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"
)

// TestGeneratedFilesAreFresh fails when hooks.proto changed and make proto
// was not run: it compiles the proto with protoc, regenerates the contract
// in memory and compares it with the committed files, and compares the
// proto's messages with those compiled into internal/gen.
func TestGeneratedFilesAreFresh(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("SKIP: no protoc (Debian package protobuf-compiler) to compile hooks.proto with")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const file = "pith/hooks/v1/hooks.proto"
	set := filepath.Join(t.TempDir(), "set.pb")
	out, err := exec.Command(protoc, "-I", filepath.Join(root, "proto"), "--include_imports", "--include_source_info",
		"--descriptor_set_out="+set, filepath.Join(root, "proto", file)).CombinedOutput()
	if err != nil {
		t.Fatalf("protoc: %v\n%s", err, out)
	}
	b, err := os.ReadFile(set)
	if err != nil {
		t.Fatal(err)
	}
	var files descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &files); err != nil {
		t.Fatal(err)
	}

	gen, err := protogen.Options{}.New(&pluginpb.CodeGeneratorRequest{FileToGenerate: []string{file}, ProtoFile: files.File})
	if err != nil {
		t.Fatal(err)
	}
	if err := wiregen.Generate(gen); err != nil {
		t.Fatal(err)
	}
	resp := gen.Response()
	if resp.Error != nil {
		t.Fatal(resp.GetError())
	}
	if len(resp.File) != 3 {
		t.Fatalf("generated %d files, want 3", len(resp.File))
	}
	for _, f := range resp.File {
		have, err := os.ReadFile(filepath.Join(root, f.GetName()))
		if err != nil || string(have) != f.GetContent() {
			t.Errorf("%s is stale (run make proto)", f.GetName())
		}
	}

	for _, fd := range files.File {
		if fd.GetName() != file {
			continue
		}
		fd.SourceCodeInfo = nil
		compiled := protodesc.ToFileDescriptorProto(pb.File_pith_hooks_v1_hooks_proto)
		if !proto.Equal(fd, compiled) {
			t.Errorf("internal/gen/pith/hooks/v1 does not match %s (run make proto)", file)
		}
	}
}
