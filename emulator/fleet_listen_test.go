package emulator_test

import (
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// listeningAddrs returns the addresses the process pid listens on over TCP: the inodes of its socket file
// descriptors (/proc/<pid>/fd) matched against the LISTEN rows of /proc/<pid>/net/tcp and tcp6.
func listeningAddrs(t *testing.T, pid int) []net.TCPAddr {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("the instance's file descriptors: %v", err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var addrs []net.TCPAddr
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatalf("/proc/%d/net/%s: %v", pid, table, err)
		}
		for _, row := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(row)
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
				continue
			}
			addrs = append(addrs, procAddr(t, f[1]))
		}
	}
	return addrs
}

// procAddr decodes a /proc/net/tcp{,6} address, "0100007F:1F90": the IP as 32-bit words in host (little-endian)
// byte order, then the port in hex.
func procAddr(t *testing.T, s string) net.TCPAddr {
	t.Helper()
	ipHex, portHex, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(ipHex)
	port, perr := strconv.ParseUint(portHex, 16, 16)
	if err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		t.Fatalf("address %q in /proc/net/tcp", s)
	}
	ip := make(net.IP, len(raw))
	for w := 0; w < len(raw); w += 4 {
		for i := range 4 {
			ip[w+i] = raw[w+3-i]
		}
	}
	return net.TCPAddr{IP: ip, Port: int(port)}
}

// An instance's /invocations takes no key, so the emulator's instances listen on 127.0.0.1 only: another host
// cannot invoke one past the emulator's access key. Checked on the instance process's own listening sockets,
// with a model whose environment asks for every interface (SAGEMAKER_BIND_TO_ADDRESS=0.0.0.0): the emulator's
// setting comes last and wins.
func TestInstancesListenOnLoopbackOnly(t *testing.T) {
	r := startFleet(t, emulator.Options{StateDir: t.TempDir(), ContainerBin: emulatortest.ContainerBinary(t)})
	const name = "speech-loopback"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1), emulatortest.InService(),
		emulatortest.Env(map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "5", "SAGEMAKER_BIND_TO_ADDRESS": "0.0.0.0"}))
	if _, err := invokeText(ctxFor(t, hangBound), r.Clients, name, "Through the emulator."); err != nil {
		t.Fatalf("invoke through the emulator: %v", err)
	}
	pid, id := r.InstancePID(t, name)
	addrs := listeningAddrs(t, pid)
	if len(addrs) == 0 {
		t.Fatalf("instance %s (pid %d) listens on nothing", id, pid)
	}
	for _, a := range addrs {
		if !a.IP.Equal(net.IPv4(127, 0, 0, 1)) {
			t.Errorf("instance %s (pid %d) listens on %s, want 127.0.0.1 only (never 0.0.0.0 or ::)", id, pid, a.String())
		}
	}
}
