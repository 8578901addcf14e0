package lbctl

import (
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"lbd/adminapi"
	"lbd/internal/testpki"
)

// tlsFixture is a Pound control API served over https on loopback by a
// server that requires a client certificate issued by clientCA, and the
// PEM files a client needs.
type tlsFixture struct {
	url        string
	serverCA   string // the server's (self-signed) certificate
	caDir      string // a directory holding serverCA and a non-PEM file
	otherCA    string // a CA that did not sign the server's certificate
	clientCert string // certificate and key, signed by clientCA
	strangerKP string // certificate and key from another CA
	notPEM     string
}

func newTLSFixture(t *testing.T) *tlsFixture {
	t.Helper()
	issue := func(s testpki.Spec, parent *testpki.Cert) *testpki.Cert {
		c, err := testpki.Issue(s, parent)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	clientCA := issue(testpki.Spec{CommonName: "client CA", CA: true}, nil)
	otherCA := issue(testpki.Spec{CommonName: "other CA", CA: true}, nil)
	client := issue(testpki.Spec{CommonName: "operator", Client: true}, clientCA)
	stranger := issue(testpki.Spec{CommonName: "stranger", Client: true}, otherCA)

	srv := httptest.NewUnstartedServer(adminapi.NewPoundHandler(&fakeController{st: fixture()}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.Pool()}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	serverPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	f := &tlsFixture{
		url:        srv.URL,
		serverCA:   writeFile(t, dir, "server-ca.pem", string(serverPEM)),
		caDir:      filepath.Join(dir, "cadir"),
		otherCA:    writeFile(t, dir, "other-ca.pem", string(otherCA.CertPEM())),
		clientCert: writeFile(t, dir, "client.pem", string(client.ChainPEM())),
		strangerKP: writeFile(t, dir, "stranger.pem", string(stranger.ChainPEM())),
		notPEM:     writeFile(t, dir, "not.pem", "not a certificate\n"),
	}
	writeFile(t, f.caDir, "a-server.pem", string(serverPEM))
	writeFile(t, f.caDir, "README", "not a certificate\n")
	return f
}

// TestTLSOptions runs list against the https server with -k, -C, -K, -S
// and the file's CAFile, CAPath, ClientCert and Verify, flags overriding
// the file.
func TestTLSOptions(t *testing.T) {
	f := newTLSFixture(t)
	dir := t.TempDir()
	conf := func(name, text string) string { return writeFile(t, dir, name, text) }
	fileAll := conf("all", "URL \""+f.url+"\"\nCAFile \""+f.serverCA+"\"\nClientCert \""+f.clientCert+"\"\n")
	fileDir := conf("dir", "URL \""+f.url+"\"\nCAPath \""+f.caDir+"\"\nClientCert \""+f.clientCert+"\"\n")
	fileNoVerify := conf("noverify", "URL \""+f.url+"\"\nVerify no\nClientCert \""+f.clientCert+"\"\n")
	fileWrong := conf("wrong", "URL \""+f.url+"\"\nCAFile \""+f.otherCA+"\"\nClientCert \""+f.strangerKP+"\"\n")
	fileServer := conf("server", "URL \"/nonexistent.sock\"\nVerify no\n"+
		"Server \"tls\"\n  URL \""+f.url+"\"\n  CAFile \""+f.serverCA+"\"\n  ClientCert \""+f.clientCert+"\"\nEnd\n")
	fileNoSection := conf("nosection", "URL \""+f.url+"\"\nVerify no\nClientCert \""+f.clientCert+"\"\n"+
		"Server \"tls\"\n  URL \""+f.url+"\"\nEnd\n")
	unknownCA := "certificate signed by unknown authority (name the server's CA with -C or CAFile, or skip the check with -k)"
	wantsCert := "(the server wants a client certificate it trusts: give it with -K or ClientCert)"
	cases := []struct {
		name   string
		conf   string
		args   []string
		errHas string
	}{
		{name: "-C and -K", args: []string{"-s", f.url, "-C", f.serverCA, "-K", f.clientCert}},
		{name: "-C directory", args: []string{"-s", f.url, "-C", f.caDir, "-K", f.clientCert}},
		{name: "-k and -K", args: []string{"-s", f.url, "-k", "-K", f.clientCert}},
		{name: "CAFile and ClientCert", conf: fileAll},
		{name: "CAPath", conf: fileDir},
		{name: "Verify no", conf: fileNoVerify},
		{name: "-S section", conf: fileServer, args: []string{"-S", "tls"}},
		{name: "section does not inherit ClientCert", conf: fileNoSection, args: []string{"-S", "tls", "-k"}, errHas: wantsCert},
		{name: "-C and -K override the file", conf: fileWrong, args: []string{"-C", f.serverCA, "-K", f.clientCert}},
		{name: "-k overrides Verify yes", conf: fileWrong, args: []string{"-k", "-K", f.clientCert}},
		{name: "no CA", args: []string{"-s", f.url, "-K", f.clientCert}, errHas: unknownCA},
		{name: "wrong CA", args: []string{"-s", f.url, "-C", f.otherCA, "-K", f.clientCert}, errHas: unknownCA},
		{name: "no client certificate", args: []string{"-s", f.url, "-C", f.serverCA}, errHas: "remote error: tls: certificate required " + wantsCert},
		{name: "untrusted client certificate", args: []string{"-s", f.url, "-C", f.serverCA, "-K", f.strangerKP}, errHas: wantsCert},
		{name: "-C missing", args: []string{"-s", f.url, "-C", "/nonexistent/ca.pem"},
			errHas: "lbctl: can't stat /nonexistent/ca.pem: no such file or directory\n"},
		{name: "-C without certificates", args: []string{"-s", f.url, "-C", f.notPEM},
			errHas: "lbctl: CA file " + f.notPEM + ": no PEM certificates in it\n"},
		{name: "CAPath without certificates", args: []string{"-s", f.url, "-C", dir},
			errHas: "lbctl: CA directory " + dir + ": no PEM certificates in it\n"},
		{name: "-K missing", args: []string{"-s", f.url, "-k", "-K", "/nonexistent/me.pem"},
			errHas: "lbctl: client certificate /nonexistent/me.pem: no such file or directory\n"},
		{name: "-K without a key", args: []string{"-s", f.url, "-k", "-K", f.serverCA},
			errHas: "lbctl: client certificate " + f.serverCA + ": tls: found a certificate rather than a key in the PEM for the private key\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			argv := append(append([]string{"lbctl", "-q"}, tc.args...), "list", "/1/1")
			r := run(map[string]string{"POUNDCTL_CONF": tc.conf}, argv...)
			checkList(t, r, tc.errHas)
		})
	}
}

// TestTLSOptionsIgnoredOnSocket checks that the TLS options, which only
// an https:// URL uses, do not get in the way of a UNIX socket.
func TestTLSOptionsIgnoredOnSocket(t *testing.T) {
	sock, _ := poundServer(t, false)
	rc := writeFile(t, t.TempDir(), "rc", "CAFile \"/nonexistent/ca.pem\"\nClientCert \"/nonexistent/me.pem\"\n")
	r := run(map[string]string{"POUNDCTL_CONF": rc}, "lbctl", "-q", "-s", sock, "-k", "-C", "/nonexistent", "list", "/1/1")
	if r.code != 0 || r.stdout != "/1/1\n/1/1/0\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestPoundctlTLS runs the same in poundctl mode, with poundctl's output.
func TestPoundctlTLS(t *testing.T) {
	f := newTLSFixture(t)
	r := run(nil, "poundctl", "-s", f.url, "-C", f.serverCA, "-K", f.clientCert, "list", "/1/1")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "Service active") {
		t.Errorf("exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
