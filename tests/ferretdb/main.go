// Command wire-server is the wire tier's database server: FerretDB, embedded through its
// package github.com/FerretDB/FerretDB/ferretdb, with its SQLite backend.
//
//	wire-server PORT DIR
//
// It listens on 127.0.0.1:PORT (0 picks a free port) and keeps its databases in DIR (created
// when missing), one SQLite file per database, in WAL mode with synchronous=NORMAL: a write is
// acknowledged only once its transaction is in the write-ahead log, so a server that is
// stopped, or killed with SIGKILL, and started again on the same DIR has every write it
// acknowledged (only a crash of the machine itself could lose the last ones: no fsync per
// commit, which would make the suite several times slower).
//
// FerretDB itself listens on another loopback port that the program picks; clients reach it
// through a relay (relay.go) that runs write commands one at a time.
//
// It prints "listening on PORT" once it accepts connections. On SIGTERM or SIGINT it stops
// listening, closes its connections and then its backend. It also stops when its standard
// input ends, so a test run that dies without stopping it leaves no server behind.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: wire-server PORT DIR")
		os.Exit(2)
	}
	port, err := strconv.Atoi(os.Args[1])
	if err != nil || port < 0 || port > 65535 {
		fmt.Fprintf(os.Stderr, "wire-server: not a port: %q\n", os.Args[1])
		os.Exit(2)
	}
	dir, err := filepath.Abs(os.Args[2])
	if err == nil {
		err = os.MkdirAll(dir, 0o700)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "wire-server: data directory: %s\n", err)
		os.Exit(1)
	}

	// FerretDB logs every error reply at WARN (a duplicate key is one): errors only, unless
	// WIRE_SERVER_DEBUG is set.
	level := slog.LevelError
	if os.Getenv("WIRE_SERVER_DEBUG") != "" {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	// busy_timeout, journal_mode(wal) and auto_vacuum(none) are FerretDB's defaults; the
	// synchronous pragma sets the durability of a commit (see above).
	query := url.Values{"_pragma": []string{"synchronous(normal)"}}
	sqliteURL := (&url.URL{Scheme: "file", Opaque: dir + "/", RawQuery: query.Encode()}).String()

	listener, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "wire-server: %s\n", err)
		os.Exit(1)
	}

	server, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "wire-server: %s\n", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		// The parent never writes: only the end of input (or a broken pipe) matters.
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()

	// New has bound FerretDB's socket: connections queue from now on, and Run accepts them.
	backend, err := url.Parse(server.MongoDBURI())
	if err != nil {
		fmt.Fprintf(os.Stderr, "wire-server: %s\n", err)
		os.Exit(1)
	}
	go (&relay{backend: backend.Host, logger: logger}).serve(listener)
	go func() {
		<-ctx.Done()
		listener.Close() // no new clients; FerretDB closes the open connections
	}()
	fmt.Printf("listening on %d\n", listener.Addr().(*net.TCPAddr).Port)

	if err := server.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "wire-server: %s\n", err)
		os.Exit(1)
	}
}
