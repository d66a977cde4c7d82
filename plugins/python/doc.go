// Package pythonplugin holds the test that starts the Python plugin of
// this directory through the host, as any plugin is started. The plugin
// itself (plugin.py) is written from docs/protocol.md alone.
package pythonplugin
