package io.kvroute.spring.gateway;

import io.kvroute.transport.okhttp.Tokenizer;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.file.Path;

/**
 * Loads the local tokenizer of the {@code kvroute-tokenizers} module when {@code kvroute.tokenizer.path} is set;
 * stateless, thread-safe.
 *
 * <p>The module is optional, so it is reached by name: its class {@value #CLASS} with a static
 * {@code load(java.nio.file.Path)} returning a {@link Tokenizer} (a {@code tokenizer.json} file, or a directory
 * holding it and {@code tokenizer_config.json}). An application may instead declare its own {@link Tokenizer} bean,
 * which replaces kvroute's.
 */
final class LocalTokenizerHook {
  /** The local tokenizer's entry point in {@code kvroute-tokenizers}. */
  static final String CLASS = "io.kvroute.tokenizers.HfTokenizer";

  private LocalTokenizerHook() {}

  static boolean available(ClassLoader loader) {
    try {
      Class.forName(CLASS, false, loader);
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /**
   * Loads the tokenizer at {@code path}.
   *
   * @throws IllegalStateException if the module is missing or cannot load the files (the message says which)
   */
  static Tokenizer load(Path path, ClassLoader loader) {
    if (!available(loader)) {
      throw new IllegalStateException("kvroute.tokenizer.path is set (" + path + ") but kvroute-tokenizers is not "
          + "on the classpath: add the io.kvroute:kvroute-tokenizers dependency, or remove the property to "
          + "tokenize with the engines' /tokenize");
    }
    try {
      Method load = Class.forName(CLASS, true, loader).getMethod("load", Path.class);
      Object tokenizer = load.invoke(null, path);
      if (!(tokenizer instanceof Tokenizer t)) {
        throw new IllegalStateException(CLASS + ".load returned " + tokenizer + ", not a Tokenizer");
      }
      return t;
    } catch (InvocationTargetException e) {
      throw new IllegalStateException("kvroute.tokenizer.path " + path + " could not be loaded: "
          + e.getCause().getMessage(), e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("kvroute-tokenizers on the classpath has no " + CLASS + ".load(Path): " + e, e);
    }
  }
}
