/**
 * kvroute's internals shared between its modules (the argument checks); not API. Exported only to kvroute's own
 * modules; on the class path it is reachable, but it may change in any release.
 */
@NullMarked
package io.kvroute.internal;

import org.jspecify.annotations.NullMarked;
