package config

import (
	"encoding/json"
	"fmt"
)

// Render encodes the configuration in format, keyed like the file so the
// output loads back. With mask set, secret-looking values are masked (see
// Config.Map), and the output is for people only.
func (c *Config) Render(format Format, mask bool) ([]byte, error) {
	m := c.Map(mask)
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("render configuration as JSON: %w", err)
		}
		return append(b, '\n'), nil
	case FormatYAML, FormatTOML:
		b, err := format.parser().Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("render configuration as %s: %w", format, err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("render configuration as %q: %w", format, ErrUnsupportedFormat)
}
