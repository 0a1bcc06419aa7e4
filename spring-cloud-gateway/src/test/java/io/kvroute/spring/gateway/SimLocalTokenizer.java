package io.kvroute.spring.gateway;

import io.kvroute.sim.SimTokenizer;
import io.kvroute.openai.ChatMessage;
import io.kvroute.transport.okhttp.Tokenizer;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * In-process tokenization with the simulated engines' own tokenizer and chat template (token-exact with them, as
 * a local Hugging Face tokenizer is with vLLM); thread-safe. Declared as a bean, it replaces kvroute's
 * {@code /tokenize} client, which is how an application plugs in a tokenizer of its own.
 */
final class SimLocalTokenizer implements Tokenizer {
  private final SimTokenizer tokenizer = SimTokenizer.standard();

  /** The bean. */
  @Configuration(proxyBeanMethods = false)
  static class Config {
    @Bean
    Tokenizer localTokenizer() {
      return new SimLocalTokenizer();
    }
  }

  @Override
  public int[] tokenize(@Nullable String model, String prompt) {
    return tokenizer.encode(prompt);
  }

  @Override
  public int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) {
    return tokenizer.encodeChat(messages);
  }
}
