package io.kvroute.sync.nats;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvroute.testkit.NatsServer;
import io.nats.client.Connection;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.Subscription;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The test server itself: it listens on loopback, relays messages, and stops, dies and restarts on its port. */
class NatsServerTest {
  @RegisterExtension
  static final NatsServerExtension NATS = new NatsServerExtension();

  @Test
  void relaysMessagesAndRestartsOnTheSamePort() throws Exception {
    NatsServer server = NATS.server();
    int port = server.port();
    assertTrue(port > 0);
    assertEquals(Connection.Status.CONNECTED, roundTrip(server.url()));

    server.kill();
    assertFalse(server.isRunning());
    assertThrows(IOException.class, () -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      }
    }, "nothing listens on the port after a kill");

    server.restart();
    assertEquals(port, server.port());
    assertEquals(Connection.Status.CONNECTED, roundTrip(server.url()));
  }

  private static Connection.Status roundTrip(String url) throws Exception {
    try (Connection c = Nats.connect(new Options.Builder().server(url).build())) {
      Subscription sub = c.subscribe("t.echo");
      c.publish("t.echo", "hello".getBytes(StandardCharsets.UTF_8));
      Message m = sub.nextMessage(Duration.ofSeconds(5));
      assertEquals("hello", new String(m.getData(), StandardCharsets.UTF_8));
      return c.getStatus();
    }
  }
}
