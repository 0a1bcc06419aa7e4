/**
 * kvroute's core: block hashing, the KV index, the worker registry, the routing policies and the {@link io.kvroute.Router}
 * facade. The one package {@code io.kvroute} is the API; everything else in it is package-private.
 *
 * <p>{@code zero.allocation.hashing} is the name the JDK derives from that jar's file name (it has no
 * {@code Automatic-Module-Name}); it is the only such name kvroute's published modules require.
 */
module io.kvroute {
  requires it.unimi.dsi.fastutil.core;
  requires zero.allocation.hashing;
  requires static org.jspecify;
  // sun.misc.Unsafe, for the hashing loop's 8-byte reads of token arrays (IntWords; optional, with a portable path).
  requires jdk.unsupported;

  exports io.kvroute;
}
