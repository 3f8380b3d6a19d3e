"""The package as a whole: its layers, its one vocabulary, its map (docs/architecture.md), its pinned
sub-package surfaces and the wheel a user installs. These read the source tree (`support.source`)."""
