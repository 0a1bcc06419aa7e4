package io.kvroute.transport.okhttp;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;

class NoDelaySocketFactoryTest {
  @Test
  void everySocketHasNaglesAlgorithmOff() throws Exception {
    NoDelaySocketFactory factory = new NoDelaySocketFactory();
    try (ServerSocket server = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        Socket unconnected = factory.createSocket();
        Socket byName = factory.createSocket("127.0.0.1", server.getLocalPort());
        Socket byAddress = factory.createSocket(InetAddress.getLoopbackAddress(), server.getLocalPort())) {
      assertTrue(unconnected.getTcpNoDelay());
      assertTrue(byName.getTcpNoDelay());
      assertTrue(byAddress.getTcpNoDelay());
    }
  }
}
