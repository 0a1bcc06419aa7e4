package io.kvroute.sync.nats;

import io.kvroute.testkit.NatsServer;
import java.io.IOException;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Runs a real {@code nats-server} on a free loopback port for a test class, and skips the class, saying how to
 * install the server, when the binary is missing; register it with
 * {@code @RegisterExtension static final NatsServerExtension NATS = new NatsServerExtension();}. Thread-safe.
 *
 * <p>Each test starts with the server running (a test that stopped or killed it gets it restarted on the same
 * port).
 */
final class NatsServerExtension implements ExecutionCondition, BeforeAllCallback, BeforeEachCallback,
    AfterAllCallback {
  private volatile NatsServer server;

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    return NatsServer.findBinary().isPresent()
        ? ConditionEvaluationResult.enabled("nats-server found")
        : ConditionEvaluationResult.disabled(NatsServer.INSTALL_HINT);
  }

  @Override
  public void beforeAll(ExtensionContext context) throws IOException {
    server = NatsServer.start();
  }

  @Override
  public void beforeEach(ExtensionContext context) throws IOException {
    if (!server.isRunning()) {
      server.restart();
    }
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (server != null) {
      server.close();
    }
  }

  /** The running server. */
  NatsServer server() {
    return server;
  }
}
