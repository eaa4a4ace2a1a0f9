import de.bwaldvogel.mongo.MongoBackend;
import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import de.bwaldvogel.mongo.backend.memory.MemoryBackend;

/**
 * The wire tier's database server: mongo-java-server on 127.0.0.1.
 *
 * <pre>WireServer PORT [H2_FILE]</pre>
 *
 * Without H2_FILE the memory backend is used; with it the H2 backend keeps the data in that
 * file, so a server stopped and started again on the same file has every write it
 * acknowledged. On SIGTERM the server stops listening, drops its connections and closes the
 * backend (H2 writes everything to the file). It also stops when its standard input ends, so
 * a test run that dies without stopping it leaves no server behind. It prints "listening on
 * PORT" once it accepts connections.
 */
public final class WireServer {
    public static void main(String[] args) {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: WireServer PORT [H2_FILE]");
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        MongoBackend backend = args.length == 2 ? new H2Backend(args[1]) : new MemoryBackend();
        MongoServer server = new MongoServer(backend);
        server.bind("127.0.0.1", port);
        Runtime.getRuntime().addShutdownHook(new Thread(server::shutdownNow, "shutdown"));
        System.out.println("listening on " + server.getLocalAddress().getPort());
        System.out.flush();
        Thread watchdog = new Thread(WireServer::exitAtEndOfInput, "stdin-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    private static void exitAtEndOfInput() {
        try {
            while (System.in.read() != -1) {
                // the parent never writes; only the end of input matters
            }
        } catch (java.io.IOException e) {
            // a broken pipe means the parent is gone, too
        }
        System.exit(0);
    }
}
