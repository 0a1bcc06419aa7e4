package io.kvroute.spring.gateway;

import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.databind.json.JsonMapper;

/**
 * The top-level {@code model} and {@code stream} members of an OpenAI-compatible request body, read with a streaming
 * parser that skips the prompt without materializing it; an immutable value, thread-safe.
 *
 * @param model the requested model, or null when the body names none
 * @param stream whether the client asked for a server-sent event stream
 */
record RequestFields(@Nullable String model, boolean stream) {
  /**
   * Reads the members of a JSON object body.
   *
   * @throws IllegalArgumentException if the body is not a JSON object, or {@code model} is not a string
   */
  static RequestFields read(byte[] body) {
    String model = null;
    boolean stream = false;
    try (JsonParser p = JsonMapper.shared().createParser(body)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IllegalArgumentException("the request body must be a JSON object");
      }
      for (JsonToken t = p.nextToken(); t != JsonToken.END_OBJECT; t = p.nextToken()) {
        if (t != JsonToken.PROPERTY_NAME) {
          throw new IllegalArgumentException("the request body is not valid JSON");
        }
        String name = p.currentName();
        JsonToken value = p.nextToken();
        if ("model".equals(name)) {
          if (value == JsonToken.VALUE_STRING) {
            model = p.getString();
          } else if (value != JsonToken.VALUE_NULL) {
            throw new IllegalArgumentException("model must be a string");
          }
        } else if ("stream".equals(name)) {
          stream = value == JsonToken.VALUE_TRUE;
        } else {
          p.skipChildren();
        }
      }
      if (p.nextToken() != null) {
        throw new IllegalArgumentException("the request body has content after its JSON object");
      }
    } catch (JacksonException e) {
      throw new IllegalArgumentException("the request body is not valid JSON: " + e.getOriginalMessage(), e);
    }
    return new RequestFields(model, stream);
  }
}
