// Package packaging holds what installs lbd: the systemd units
// (systemd/) and the Debian package description and maintainer scripts
// (deb/, built by `make deb`). Its test checks the units with
// systemd-analyze verify.
package packaging
