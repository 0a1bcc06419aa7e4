package io.kvroute.tokenizers;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.ProxySelector;
import java.net.SocketAddress;
import java.net.URI;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Run in a fresh JVM by {@link NativeLibraryTest}: records every connection the JVM attempts (each is sent to a
 * SOCKS proxy on a closed loopback port, so it would fail as it would on a machine without network), loads a
 * tokenizer, encodes, and prints what happened.
 */
final class OfflineLoadCheck {
  private OfflineLoadCheck() {}

  public static void main(String[] args) throws IOException {
    List<String> attempts = new CopyOnWriteArrayList<>();
    ProxySelector.setDefault(new ProxySelector() {
      @Override
      public List<Proxy> select(URI uri) {
        attempts.add(String.valueOf(uri));
        return List.of(new Proxy(Proxy.Type.SOCKS, new InetSocketAddress("127.0.0.1", 1)));
      }

      @Override
      public void connectFailed(URI uri, SocketAddress sa, IOException e) {}
    });
    try (HfTokenizer tokenizer = HfTokenizer.newBuilder(Path.of(args[0])).engine(HfTokenizer.Engine.NATIVE)
        .build()) {
      System.out.println("IDS=" + Arrays.toString(tokenizer.tokenize("Hello, world!", false)));
    }
    System.out.println("OFFLINE=" + System.getProperty(NativeTokenizer.OFFLINE_PROPERTY));
    System.out.println("TRACKING=" + System.getProperty(NativeTokenizer.TRACKING_PROPERTY));
    System.out.println("ATTEMPTS=" + attempts);
  }
}
