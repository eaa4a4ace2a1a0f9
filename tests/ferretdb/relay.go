package main

// The relay in front of FerretDB: clients connect to it, and it passes each MongoDB wire
// protocol message on to FerretDB over a connection of its own, and the replies back.
//
// FerretDB 1.24 applies an update (update, findAndModify) as a read followed by a separate
// write, so two concurrent updates of one document can both read it and one increment is
// lost, where MongoDB makes every single-document write atomic. The relay runs the write
// commands one at a time (reads go on meanwhile), which gives every write the atomicity
// MongoDB guarantees; running them one after another is also a schedule MongoDB may choose.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
)

const (
	opMsg       = 2013
	moreToCome  = 1 << 1
	maxMessage  = 48 * 1000 * 1000 // maxMessageSizeBytes of hello
	headerBytes = 16
)

// writeCommands are run one at a time (see above).
var writeCommands = map[string]bool{
	"insert": true, "update": true, "delete": true, "findAndModify": true, "findandmodify": true,
}

type relay struct {
	backend string
	writes  sync.Mutex
	logger  *slog.Logger
}

func (r *relay) serve(listener net.Listener) {
	for {
		client, err := listener.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				r.logger.Error("accept", "error", err)
			}
			return
		}
		go r.handle(client)
	}
}

func (r *relay) handle(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", r.backend)
	if err != nil {
		r.logger.Error("dial FerretDB", "error", err)
		return
	}
	defer server.Close()
	fromClient, fromServer := bufio.NewReader(client), bufio.NewReader(server)
	for {
		request, err := readMessage(fromClient)
		if err != nil {
			return // the client went away
		}
		if err := r.exchange(request, client, server, fromServer); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				r.logger.Warn("relay", "error", err)
			}
			return
		}
	}
}

// exchange sends one request to FerretDB and passes its replies back.
func (r *relay) exchange(request []byte, client, server net.Conn, fromServer *bufio.Reader) error {
	if writeCommands[commandName(request)] {
		r.writes.Lock()
		defer r.writes.Unlock()
	}
	if _, err := server.Write(request); err != nil {
		return err
	}
	if hasMoreToCome(request) {
		return nil // the client expects no reply
	}
	for {
		reply, err := readMessage(fromServer)
		if err != nil {
			return err
		}
		if _, err := client.Write(reply); err != nil {
			return err
		}
		if !hasMoreToCome(reply) { // an exhaust reply is followed by more
			return nil
		}
	}
}

func readMessage(reader *bufio.Reader) ([]byte, error) {
	header := make([]byte, headerBytes)
	if _, err := io.ReadFull(reader, header); err != nil {
		return nil, err
	}
	length := int(int32(binary.LittleEndian.Uint32(header)))
	if length < headerBytes || length > maxMessage {
		return nil, fmt.Errorf("message length %d", length)
	}
	message := make([]byte, length)
	copy(message, header)
	if _, err := io.ReadFull(reader, message[headerBytes:]); err != nil {
		return nil, err
	}
	return message, nil
}

func opCode(message []byte) int32 {
	return int32(binary.LittleEndian.Uint32(message[12:16]))
}

func hasMoreToCome(message []byte) bool {
	return opCode(message) == opMsg && len(message) >= headerBytes+4 &&
		binary.LittleEndian.Uint32(message[headerBytes:])&moreToCome != 0
}

// commandName is the first key of an OP_MSG's body (section kind 0), or "".
func commandName(message []byte) string {
	if opCode(message) != opMsg {
		return ""
	}
	offset := headerBytes + 4 // flag bits
	for offset < len(message) {
		kind := message[offset]
		offset++
		if offset+4 > len(message) {
			return ""
		}
		size := int(int32(binary.LittleEndian.Uint32(message[offset:])))
		if kind == 0 { // the body: int32 size, then the first element: type byte, name\0
			start := offset + 4 + 1
			for end := start; end < len(message) && end < offset+size; end++ {
				if message[end] == 0 {
					return string(message[start:end])
				}
			}
			return ""
		}
		offset += size // a document sequence: int32 size (counting itself), identifier, documents
	}
	return ""
}
