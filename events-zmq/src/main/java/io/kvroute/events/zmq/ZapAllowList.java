package io.kvroute.events.zmq;

import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.WARNING;

import java.nio.charset.StandardCharsets;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import org.zeromq.SocketType;
import org.zeromq.ZContext;
import org.zeromq.ZMQ;

/**
 * A ZeroMQ authentication (ZAP, RFC 27) handler admitting only CURVE clients whose public key is on a list; one per
 * {@link ZContext}, serving every CURVE server socket of that context; thread-safe.
 *
 * <p>Without a ZAP handler a CURVE server accepts any client that knows the server's public key. With this handler
 * bound, a client whose key is not listed fails the handshake and never receives (or sends) a message. One daemon
 * thread answers the requests.
 */
final class ZapAllowList implements AutoCloseable {
  private static final System.Logger logger = System.getLogger(ZapAllowList.class.getName());
  static final String ENDPOINT = "inproc://zeromq.zap.01";

  private final Set<String> allowed;
  private final ZMQ.Socket handler;
  private final Thread thread;
  private volatile boolean stopping;
  private volatile long denied;

  /**
   * Binds the handler in {@code context}.
   *
   * @throws IllegalArgumentException if a key is not Z85
   * @throws org.zeromq.ZMQException if the context already has a ZAP handler
   */
  ZapAllowList(ZContext context, Collection<String> z85PublicKeys, String name) {
    Set<String> keys = new HashSet<>();
    for (String key : z85PublicKeys) {
      CurveKeyPair.checkKey(key, "allowed client key");
      keys.add(key);
    }
    this.allowed = Set.copyOf(keys);
    this.handler = context.createSocket(SocketType.REP);
    handler.setLinger(0);
    handler.setReceiveTimeOut(100);
    handler.bind(ENDPOINT);
    this.thread = new Thread(this::run, "kvroute-zap-" + name);
    thread.setDaemon(true);
    thread.start();
  }

  /** Handshakes refused so far. */
  long denied() {
    return denied;
  }

  private void run() {
    while (!stopping) {
      try {
        byte[] version = handler.recv(0);
        if (version == null) {
          continue;
        }
        byte[][] frames = new byte[7][];
        frames[0] = version;
        int n = 1;
        while (handler.hasReceiveMore()) {
          byte[] f = handler.recv(0);
          if (n < frames.length) {
            frames[n] = f;
          }
          n++;
        }
        // version, request id, domain, address, identity, mechanism, credentials (the client's 32-byte key)
        byte[] requestId = n > 1 ? frames[1] : new byte[0];
        String mechanism = n > 5 ? new String(frames[5], StandardCharsets.US_ASCII) : "";
        String key = n > 6 && frames[6] != null && frames[6].length == 32 ? ZMQ.Curve.z85Encode(frames[6]) : null;
        boolean ok = mechanism.equals("CURVE") && key != null && allowed.contains(key);
        if (!ok) {
          denied++;
          logger.log(WARNING, "refused a " + mechanism + " client" + (key == null ? "" : " with key " + key)
              + ": not on the allow-list");
        } else {
          logger.log(DEBUG, () -> "admitted CURVE client " + key);
        }
        handler.sendMore("1.0");
        handler.sendMore(requestId);
        handler.sendMore(ok ? "200" : "400");
        handler.sendMore(ok ? "OK" : "client key not allowed");
        handler.sendMore(ok ? key : "");
        handler.send(new byte[0], 0);
      } catch (RuntimeException e) {
        if (!stopping) {
          logger.log(WARNING, "ZAP handler error; continuing", e);
        }
      }
    }
  }

  @Override
  public void close() {
    stopping = true;
    boolean interrupted = false;
    while (thread.isAlive()) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    handler.close();
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
