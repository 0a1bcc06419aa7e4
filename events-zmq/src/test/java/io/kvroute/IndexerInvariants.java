package io.kvroute;

/** Reaches {@link KvIndexer}'s package-private consistency check from this module's tests. */
public final class IndexerInvariants {
  private IndexerInvariants() {}

  /** @throws IllegalStateException if the index is internally inconsistent */
  public static void check(KvIndexer indexer) {
    indexer.checkInvariants();
  }
}
