/**
 * The OpenAI-compatible wire format, with no dependencies: {@link io.kvroute.openai.Json}, one strict RFC 8259
 * reader and writer, and {@link io.kvroute.openai.OpenAiRequest}, the parsed body of a completion or chat
 * completion request (model, stream, prompt or messages), shared by the transport, the simulator and gateways so
 * that every part of kvroute reads a request the same way.
 */
@NullMarked
package io.kvroute.openai;

import org.jspecify.annotations.NullMarked;
