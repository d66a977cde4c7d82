//go:build !unix

package admission

// DescriptorLimit is unknown here: the caps take their smallest
// defaults unless configured.
func DescriptorLimit() uint64 { return 0 }
