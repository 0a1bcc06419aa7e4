/**
 * The OpenAI-compatible wire format, with no dependencies: {@link io.kvroute.openai.OpenAiRequest}, the parsed body
 * of a completion or chat completion request (model, stream, prompt or messages), read strictly (RFC 8259, one
 * reader for all of kvroute), and {@link io.kvroute.openai.ChatMessage}, shared by the transport, the simulator,
 * the tokenizers and gateways so that every part of kvroute reads a request the same way.
 */
@NullMarked
package io.kvroute.openai;

import org.jspecify.annotations.NullMarked;
