package io.kvroute.transport.okhttp;

import java.util.Objects;

/**
 * One message of a chat conversation, as OpenAI's {@code messages} hold it; an immutable value, thread-safe.
 *
 * @param role {@code system}, {@code user}, {@code assistant}, {@code tool}, …
 * @param content the message text
 */
public record ChatMessage(String role, String content) {
  /** @throws NullPointerException if {@code role} or {@code content} is null */
  public ChatMessage {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(content, "content");
  }

  /** A message of role {@code user}. */
  public static ChatMessage user(String content) {
    return new ChatMessage("user", content);
  }

  /** A message of role {@code system}. */
  public static ChatMessage system(String content) {
    return new ChatMessage("system", content);
  }

  /** A message of role {@code assistant}. */
  public static ChatMessage assistant(String content) {
    return new ChatMessage("assistant", content);
  }
}
