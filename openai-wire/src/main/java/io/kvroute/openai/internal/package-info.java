/**
 * Not API: the strict JSON reader and writer and the first-output-token scanner that kvroute's own modules share.
 * The module exports this package only to them; it may change in any release.
 */
@NullMarked
package io.kvroute.openai.internal;

import org.jspecify.annotations.NullMarked;
