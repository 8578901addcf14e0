// Package uring is an experimental io_uring data path for plain HTTP/1.1
// listeners (issue 20, "below the floor"): one ring per worker drives all
// of its connections from a completion loop, so one io_uring_enter
// submits the sends and receives of many requests at once.
//
// No Go io_uring library is served by the module proxy this project uses
// (giouring, iouring-go and go-uring are all refused), so the ring is
// set up here with raw system calls through golang.org/x/sys/unix: the
// part of the ABI used is small (setup, one mmap, enter).
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Opcodes, SQE flags and setup/enter flags of the io_uring ABI used here
// (include/uapi/linux/io_uring.h).
const (
	opNop     = 0
	opTimeout = 11
	opAccept  = 13
	opConnect = 16
	opRead    = 22
	opSend    = 26
	opRecv    = 27

	sqeIOLink      = 1 << 2
	sqeSkipSuccess = 1 << 6

	setupCQSize       = 1 << 3
	setupSubmitAll    = 1 << 7
	setupCoopTaskrun  = 1 << 8
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13

	enterGetEvents = 1 << 0

	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1

	acceptMultishot = 1 << 0
	timeoutMulti    = 1 << 6 // IORING_TIMEOUT_MULTISHOT
	cqeFMore        = 1 << 1

	offSQRing = 0
	offSQEs   = 0x10000000
)

type sqRingOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqRingOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqRingOffsets
	cqOff                                                                  cqRingOffsets
}

// SQE is a submission queue entry (64 bytes).
type SQE struct {
	Opcode   uint8
	Flags    uint8
	Ioprio   uint16
	Fd       int32
	Off      uint64
	Addr     uint64
	Len      uint32
	OpFlags  uint32
	UserData uint64
	BufIndex uint16
	_        uint16
	_        int32
	_        [2]uint64
}

// CQE is a completion queue entry (16 bytes).
type CQE struct {
	UserData uint64
	Res      int32
	Flags    uint32
}

// Ring is one io_uring instance, used by one goroutine locked to its
// thread (SINGLE_ISSUER, DEFER_TASKRUN).
type Ring struct {
	fd       int
	ringMem  []byte
	sqeMem   []byte
	sqHead   *uint32
	sqTail   *uint32
	sqMask   uint32
	sqArray  []uint32
	sqes     []SQE
	cqHead   *uint32
	cqTail   *uint32
	cqMask   uint32
	cqes     []CQE
	sqLocal  uint32 // our tail, published by flush
	pending  uint32 // SQEs written since the last enter
	Enters   uint64 // io_uring_enter calls, for the experiment's counts
	Submited uint64
}

// ErrUnavailable means the kernel or a seccomp profile refused io_uring.
var ErrUnavailable = errors.New("uring: io_uring unavailable")

// New sets up a ring with entries SQEs (a power of two) and 4x as many
// CQEs. It returns ErrUnavailable (wrapped) when io_uring is refused.
func New(entries uint32) (*Ring, error) {
	p := params{flags: setupCQSize | setupSubmitAll | setupCoopTaskrun | setupSingleIssuer | setupDeferTaskrun, cqEntries: entries * 4}
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
	if errno != 0 {
		return nil, fmt.Errorf("%w: io_uring_setup: %v", ErrUnavailable, errno)
	}
	r := &Ring{fd: int(fd)}
	if p.features&featSingleMmap == 0 || p.features&featNoDrop == 0 {
		unix.Close(r.fd)
		return nil, fmt.Errorf("%w: kernel too old (features %#x)", ErrUnavailable, p.features)
	}
	if err := r.mmap(&p); err != nil {
		unix.Close(r.fd)
		return nil, err
	}
	return r, nil
}

func (r *Ring) mmap(p *params) error {
	sqSize := p.sqOff.array + p.sqEntries*4
	cqSize := p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(CQE{}))
	size := max(sqSize, cqSize)
	mem, err := unix.Mmap(r.fd, offSQRing, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("uring: mmap rings: %w", err)
	}
	sqeMem, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(SQE{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		unix.Munmap(mem)
		return fmt.Errorf("uring: mmap sqes: %w", err)
	}
	base := unsafe.Pointer(&mem[0])
	at := func(off uint32) unsafe.Pointer { return unsafe.Add(base, off) }
	r.ringMem, r.sqeMem = mem, sqeMem
	r.sqHead = (*uint32)(at(p.sqOff.head))
	r.sqTail = (*uint32)(at(p.sqOff.tail))
	r.sqMask = *(*uint32)(at(p.sqOff.ringMask))
	r.sqArray = unsafe.Slice((*uint32)(at(p.sqOff.array)), p.sqEntries)
	r.sqes = unsafe.Slice((*SQE)(unsafe.Pointer(&sqeMem[0])), p.sqEntries)
	r.cqHead = (*uint32)(at(p.cqOff.head))
	r.cqTail = (*uint32)(at(p.cqOff.tail))
	r.cqMask = *(*uint32)(at(p.cqOff.ringMask))
	r.cqes = unsafe.Slice((*CQE)(at(p.cqOff.cqes)), p.cqEntries)
	// The array maps ring slots to SQE indices one to one.
	for i := range r.sqArray {
		r.sqArray[i] = uint32(i)
	}
	r.sqLocal = atomic.LoadUint32(r.sqTail)
	return nil
}

// Close releases the ring; in-flight operations are cancelled by the
// kernel.
func (r *Ring) Close() {
	unix.Munmap(r.sqeMem)
	unix.Munmap(r.ringMem)
	unix.Close(r.fd)
}

// GetSQE returns a zeroed SQE to fill, entering the kernel to make room
// when the submission queue is full.
func (r *Ring) GetSQE() *SQE {
	for r.sqLocal-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		r.flush()
		if _, err := r.enter(r.pending, 0, 0); err != nil {
			panic(err) // SQ full and the kernel refuses to take it: unrecoverable
		}
	}
	s := &r.sqes[r.sqLocal&r.sqMask]
	*s = SQE{}
	r.sqLocal++
	r.pending++
	return s
}

func (r *Ring) flush() { atomic.StoreUint32(r.sqTail, r.sqLocal) }

func (r *Ring) enter(submit, wait, flags uint32) (int, error) {
	r.Enters++
	for {
		var n uintptr
		var errno unix.Errno
		if wait > 0 {
			n, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(wait), uintptr(flags), 0, 0)
		} else {
			n, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), 0, uintptr(flags), 0, 0)
		}
		switch errno {
		case 0:
			r.pending -= uint32(n)
			r.Submited += uint64(n)
			return int(n), nil
		case unix.EINTR:
			continue
		case unix.EAGAIN, unix.EBUSY:
			// CQ overflow backlog or out of memory for requests: reap first.
			return 0, nil
		}
		return 0, fmt.Errorf("uring: io_uring_enter: %w", errno)
	}
}

// SubmitAndWait publishes the queued SQEs and waits for at least one
// completion (when none is ready yet) in a single io_uring_enter.
func (r *Ring) SubmitAndWait() error {
	r.flush()
	if atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead) && r.pending == 0 {
		return nil
	}
	wait := uint32(1)
	if atomic.LoadUint32(r.cqTail) != atomic.LoadUint32(r.cqHead) {
		wait = 0
	}
	_, err := r.enter(r.pending, wait, enterGetEvents)
	return err
}

// Reap calls fn for every completion ready and marks them consumed.
func (r *Ring) Reap(fn func(c *CQE)) int {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for ; head != tail; head++ {
		c := r.cqes[head&r.cqMask]
		atomic.StoreUint32(r.cqHead, head+1) // fn may enter the kernel
		fn(&c)
		n++
	}
	return n
}

// Probe reports whether io_uring can be used here (kernel support, no
// seccomp or sysctl refusal), by setting up and closing a small ring.
func Probe() error {
	r, err := New(8)
	if err != nil {
		return err
	}
	r.Close()
	return nil
}

// Helpers that fill the SQEs the data path uses.

func (s *SQE) prepRW(op uint8, fd int, addr unsafe.Pointer, n int, off uint64, ud uint64) {
	s.Opcode, s.Fd, s.Addr, s.Len, s.Off, s.UserData = op, int32(fd), uint64(uintptr(addr)), uint32(n), off, ud
}

// PrepRecv receives into b.
func (s *SQE) PrepRecv(fd int, b []byte, ud uint64) {
	s.prepRW(opRecv, fd, unsafe.Pointer(unsafe.SliceData(b)), len(b), 0, ud)
}

// PrepSend sends all of b (MSG_WAITALL: the kernel retries a short send).
func (s *SQE) PrepSend(fd int, b []byte, ud uint64) {
	s.prepRW(opSend, fd, unsafe.Pointer(unsafe.SliceData(b)), len(b), 0, ud)
	s.OpFlags = unix.MSG_WAITALL | unix.MSG_NOSIGNAL
}

// PrepAcceptMultishot accepts connections on fd until cancelled.
func (s *SQE) PrepAcceptMultishot(fd int, ud uint64) {
	s.prepRW(opAccept, fd, nil, 0, 0, ud)
	s.Ioprio = acceptMultishot
	s.OpFlags = unix.SOCK_CLOEXEC
}

// PrepConnect connects fd to the address sa points to (len n).
func (s *SQE) PrepConnect(fd int, sa unsafe.Pointer, n int, ud uint64) {
	s.prepRW(opConnect, fd, sa, 0, uint64(n), ud)
}

// PrepRead reads from a file (the wake-up eventfd).
func (s *SQE) PrepRead(fd int, b []byte, ud uint64) {
	s.prepRW(opRead, fd, unsafe.Pointer(unsafe.SliceData(b)), len(b), ^uint64(0), ud)
}

// PrepTimeoutMulti completes every ts until cancelled.
func (s *SQE) PrepTimeoutMulti(ts *unix.Timespec, ud uint64) {
	s.prepRW(opTimeout, -1, unsafe.Pointer(ts), 1, 0, ud)
	s.OpFlags = timeoutMulti
}
