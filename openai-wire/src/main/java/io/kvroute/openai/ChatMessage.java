package io.kvroute.openai;

import java.util.Objects;

/**
 * One message of a chat conversation, as OpenAI's {@code messages} hold it; an immutable value, thread-safe.
 *
 * @param role {@code system}, {@code user}, {@code assistant}, {@code tool}, …
 * @param content the message text (list-of-parts contents are joined with a newline)
 */
public record ChatMessage(String role, String content) {
  /**
   * Checks the components.
   *
   * @param role the role
   * @param content the text
   * @throws NullPointerException if {@code role} or {@code content} is null
   */
  public ChatMessage {
    Objects.requireNonNull(role, "role");
    Objects.requireNonNull(content, "content");
  }

  /**
   * A message of role {@code user}.
   *
   * @param content the text
   * @return the message
   */
  public static ChatMessage user(String content) {
    return new ChatMessage("user", content);
  }

  /**
   * A message of role {@code system}.
   *
   * @param content the text
   * @return the message
   */
  public static ChatMessage system(String content) {
    return new ChatMessage("system", content);
  }

  /**
   * A message of role {@code assistant}.
   *
   * @param content the text
   * @return the message
   */
  public static ChatMessage assistant(String content) {
    return new ChatMessage("assistant", content);
  }
}
