/**
 * kvroute's local tokenization: Hugging Face {@code tokenizer.json} through DJL's tokenizers and chat templates
 * through Jinjava, token-exact with vLLM.
 *
 * <p>{@code jinjava} is a name derived from that jar's file name (it declares no {@code Automatic-Module-Name});
 * {@code java.desktop} is read for {@code java.beans.FeatureDescriptor}, which Jinjava's EL resolver API names.
 */
@SuppressWarnings("requires-automatic") // automatic modules: see the README, "Java modules"
module io.kvroute.tokenizers {
  requires transitive io.kvroute;
  requires transitive io.kvroute.transport.okhttp;
  requires ai.djl.tokenizers;
  requires it.unimi.dsi.fastutil.core;
  requires jinjava;
  requires com.fasterxml.jackson.core;
  requires com.fasterxml.jackson.databind;
  requires java.desktop;
  requires static org.jspecify;

  exports io.kvroute.tokenizers;
}
