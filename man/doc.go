// Package man holds lbd's manual pages as roff sources: lbd.8 (the
// daemon), lbd.cfg.5 (the configuration language) and lbctl.8 (the
// control command). It has no code; its tests render every page with
// groff, refuse warnings, and check that the pages document every
// configuration keyword, every lbd flag and every lbctl command and
// option, so the pages cannot drift from the programs.
package man
