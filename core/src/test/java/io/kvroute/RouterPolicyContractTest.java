package io.kvroute;

import io.kvroute.testkit.RouterPolicyContract;
import org.junit.jupiter.api.Nested;

/**
 * The contract every built-in policy keeps: each nested class runs kvroute-testkit's {@link RouterPolicyContract}
 * (seeded random clusters and request streams), exactly as a custom policy's test would.
 */
class RouterPolicyContractTest {
  @Nested
  class RoundRobin extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.roundRobin();
    }
  }

  @Nested
  class Uniform extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.random();
    }
  }

  @Nested
  class LeastLoaded extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.leastLoaded();
    }
  }

  @Nested
  class KvAware extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.kvAware();
    }
  }

  @Nested
  class KvAwareSampled extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.kvAware(KvAwareConfig.DEFAULT.withTemperature(0.5));
    }
  }

  @Nested
  class Approximate extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.approximate();
    }
  }

  @Nested
  class CacheAffinity extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.cacheAffinity();
    }
  }

  @Nested
  class PredictedTtft extends RouterPolicyContract {
    @Override
    protected RouterPolicy policy() {
      return RouterPolicy.predictedTtft();
    }
  }
}
