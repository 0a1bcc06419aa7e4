/**
 * kvroute's test kit for users' tests: a fake ticker, an await helper, fixtures, and the router-policy contract as
 * an abstract JUnit 5 test. JUnit reads the contract's tests and seed sources reflectively, so the package is also
 * opened to it.
 */
module io.kvroute.testkit {
  requires transitive io.kvroute;
  requires transitive org.junit.jupiter.api;
  requires transitive org.junit.jupiter.params;
  requires static org.jspecify;

  exports io.kvroute.testkit;
  opens io.kvroute.testkit to org.junit.platform.commons;
}
