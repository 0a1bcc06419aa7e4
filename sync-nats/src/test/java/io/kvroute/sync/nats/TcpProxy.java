package io.kvroute.sync.nats;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP relay on a free loopback port that can be cut and healed, to isolate one NATS client from the server (a
 * network partition, which a real server cannot produce for one client alone); thread-safe.
 *
 * <p>While cut, open connections are closed and new ones are accepted and closed at once.
 */
final class TcpProxy implements AutoCloseable {
  private final ServerSocket server;
  private final int targetPort;
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();
  private volatile boolean cut;
  private volatile boolean closed;

  TcpProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::acceptLoop, "tcp-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  String url() {
    return "nats://127.0.0.1:" + server.getLocalPort();
  }

  /** Closes every relayed connection and refuses new ones. */
  void cut() {
    cut = true;
    for (Socket s : sockets) {
      closeQuietly(s);
    }
    sockets.clear();
  }

  /** Relays again. */
  void heal() {
    cut = false;
  }

  private void acceptLoop() {
    while (!closed) {
      try {
        Socket client = server.accept();
        if (cut) {
          closeQuietly(client);
          continue;
        }
        Socket upstream = new Socket();
        upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 2000);
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        sockets.add(client);
        sockets.add(upstream);
        pump(client, upstream);
        pump(upstream, client);
      } catch (IOException e) {
        if (closed) {
          return;
        }
      }
    }
  }

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[16 * 1024];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buffer)) >= 0) {
          out.write(buffer, 0, n);
          out.flush();
        }
      } catch (IOException e) {
        // closed by cut() or by either side
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "tcp-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException ignored) {
      // closing
    }
  }

  @Override
  public void close() throws IOException {
    closed = true;
    cut();
    server.close();
  }
}
