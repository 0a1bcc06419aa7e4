/**
 * Local tokenization for routing: {@link io.kvroute.tokenizers.HfTokenizer} reads the {@code tokenizer.json},
 * {@code tokenizer_config.json} and chat template vLLM serves a model with, and turns completion and chat
 * completion bodies into the token ids vLLM would compute, in the gateway's JVM and without a network call.
 *
 * <p>Encoding runs in the Hugging Face {@code tokenizers} library (Rust, through DJL's JNI bindings; the native
 * library ships inside DJL's jar). Chat templates run in Jinjava with Python's string and dict methods,
 * {@code tojson}, {@code raise_exception} and {@code strftime_now} added; a template that needs more is refused
 * when it is loaded, with the construct named ({@link io.kvroute.tokenizers.ChatTemplateException}).
 *
 * <p>Threads: everything runs on the caller's thread; instances are thread-safe.
 */
@NullMarked
package io.kvroute.tokenizers;

import org.jspecify.annotations.NullMarked;
