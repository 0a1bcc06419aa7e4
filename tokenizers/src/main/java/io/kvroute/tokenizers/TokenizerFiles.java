package io.kvroute.tokenizers;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What the tokenizer files say: the text of {@code tokenizer.json} with its added tokens and whether its
 * pre-tokenizer treats the first piece of a text differently, and from {@code tokenizer_config.json} the chat
 * template and special tokens; immutable once read, thread-safe.
 */
final class TokenizerFiles {
  static final ObjectMapper JSON = new ObjectMapper();

  /** One entry of {@code tokenizer.json}'s {@code added_tokens}. */
  record AddedToken(int id, String content, boolean special, boolean normalized, boolean lstrip, boolean rstrip,
      boolean singleWord) {}

  final Path tokenizerJson;
  final String tokenizerJsonText;
  final List<AddedToken> addedTokens;
  /** Whether a text's first piece is pre-tokenized differently from the others (Metaspace "first"). */
  final boolean firstPieceSpecial;
  /** The chat templates by name ("default" for a single one). */
  final Map<String, String> chatTemplates;
  final @Nullable String templateSource;
  /** bos_token, eos_token, unk_token, pad_token, ... as the template sees them. */
  final Map<String, String> specialTokens;
  /** {@code tokenizer_class} of the config, or null. */
  final @Nullable String tokenizerClass;
  /** {@code add_bos_token} / {@code add_eos_token} of the config, or null where absent. */
  final @Nullable Boolean addBosToken;
  final @Nullable Boolean addEosToken;

  private TokenizerFiles(Path tokenizerJson, String text, List<AddedToken> addedTokens, boolean firstPieceSpecial,
      Map<String, String> chatTemplates, @Nullable String templateSource, Map<String, String> specialTokens,
      @Nullable String tokenizerClass, @Nullable Boolean addBosToken, @Nullable Boolean addEosToken) {
    this.tokenizerJson = tokenizerJson;
    this.tokenizerJsonText = text;
    this.addedTokens = addedTokens;
    this.firstPieceSpecial = firstPieceSpecial;
    this.chatTemplates = chatTemplates;
    this.templateSource = templateSource;
    this.specialTokens = specialTokens;
    this.tokenizerClass = tokenizerClass;
    this.addBosToken = addBosToken;
    this.addEosToken = addEosToken;
  }

  /**
   * Reads the files.
   *
   * @param tokenizerJson the {@code tokenizer.json}
   * @param config the {@code tokenizer_config.json}, or null for none (then no chat template unless given)
   * @param chatTemplate a {@code chat_template.jinja} (or the template text's file) that overrides the config's
   * @throws IOException naming the file and the problem when one is missing, unreadable or not what it must be
   */
  static TokenizerFiles read(Path tokenizerJson, @Nullable Path config, @Nullable Path chatTemplate)
      throws IOException {
    String text = readUtf8(tokenizerJson, "tokenizer.json");
    List<AddedToken> added = new ArrayList<>();
    boolean[] firstPiece = new boolean[1];
    boolean sawModel = false;
    try (JsonParser p = new JsonFactory().setCodec(JSON).createParser(text)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IOException(tokenizerJson + " is not a tokenizer.json: it is not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        switch (field) {
          case "added_tokens" -> {
            JsonNode tokens = p.readValueAsTree();
            if (tokens != null && tokens.isArray()) {
              for (JsonNode t : tokens) {
                added.add(new AddedToken(t.path("id").asInt(-1), t.path("content").asText(""),
                    t.path("special").asBoolean(false), t.path("normalized").asBoolean(false),
                    t.path("lstrip").asBoolean(false), t.path("rstrip").asBoolean(false),
                    t.path("single_word").asBoolean(false)));
              }
            }
          }
          case "pre_tokenizer", "normalizer" -> {
            JsonNode node = p.readValueAsTree();
            firstPiece[0] |= mentionsFirstOnly(node);
          }
          case "model" -> {
            sawModel = value == JsonToken.START_OBJECT;
            p.skipChildren();
          }
          default -> p.skipChildren();
        }
      }
    } catch (JsonProcessingException e) {
      throw new IOException(tokenizerJson + " is not valid JSON: " + e.getOriginalMessage(), e);
    }
    if (!sawModel) {
      throw new IOException(tokenizerJson + " is not a tokenizer.json: it has no \"model\" object");
    }

    Map<String, String> templates = new LinkedHashMap<>();
    Map<String, String> special = new LinkedHashMap<>();
    String tokenizerClass = null;
    Boolean addBos = null;
    Boolean addEos = null;
    if (config != null) {
      String configText = readUtf8(config, "tokenizer_config.json");
      JsonNode root;
      try {
        root = JSON.readTree(configText);
      } catch (JsonProcessingException e) {
        throw new IOException(config + " is not valid JSON: " + e.getOriginalMessage(), e);
      }
      if (root == null || !root.isObject()) {
        throw new IOException(config + " is not a tokenizer_config.json: it is not a JSON object");
      }
      JsonNode template = root.get("chat_template");
      if (template != null && template.isTextual()) {
        templates.put("default", template.asText());
      } else if (template != null && template.isArray()) {
        for (JsonNode t : template) {
          if (t.path("name").isTextual() && t.path("template").isTextual()) {
            templates.put(t.get("name").asText(), t.get("template").asText());
          }
        }
      }
      for (String key : List.of("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token",
          "mask_token")) {
        JsonNode v = root.get(key);
        String s = v == null || v.isNull() ? null : v.isTextual() ? v.asText() : v.path("content").isTextual()
            ? v.get("content").asText() : null;
        if (s != null) {
          special.put(key, s);
        }
      }
      tokenizerClass = root.path("tokenizer_class").isTextual() ? root.get("tokenizer_class").asText() : null;
      addBos = flag(root, "add_bos_token", config);
      addEos = flag(root, "add_eos_token", config);
    }
    String templateSource = config == null ? null : config.toString();
    if (chatTemplate != null) {
      templates.clear();
      templates.put("default", readUtf8(chatTemplate, "chat template"));
      templateSource = chatTemplate.toString();
    }
    return new TokenizerFiles(tokenizerJson, text, List.copyOf(added), firstPiece[0], templates, templateSource,
        special, tokenizerClass, addBos, addEos);
  }

  private static @Nullable Boolean flag(JsonNode root, String name, Path config) throws IOException {
    JsonNode v = root.get(name);
    if (v == null || v.isNull()) {
      return null;
    }
    if (!v.isBoolean()) {
      throw new IOException(config + ": " + name + " must be true or false but was " + v);
    }
    return v.asBoolean();
  }

  private static boolean mentionsFirstOnly(@Nullable JsonNode node) {
    if (node == null) {
      return false;
    }
    if (node.isObject()) {
      if ("Metaspace".equals(node.path("type").asText()) && "first".equals(node.path("prepend_scheme").asText())) {
        return true;
      }
      for (JsonNode child : node) {
        if (mentionsFirstOnly(child)) {
          return true;
        }
      }
    } else if (node.isArray()) {
      for (JsonNode child : node) {
        if (mentionsFirstOnly(child)) {
          return true;
        }
      }
    }
    return false;
  }

  static String readUtf8(Path file, String what) throws IOException {
    if (!Files.exists(file)) {
      throw new NoSuchFileException(file.toString(), null, "the " + what + " file does not exist");
    }
    if (Files.isDirectory(file)) {
      throw new IOException(file + " is a directory, not the " + what + " file");
    }
    byte[] bytes = Files.readAllBytes(file);
    if (file.getFileName().toString().endsWith(".gz")) {
      try (java.util.zip.GZIPInputStream in = new java.util.zip.GZIPInputStream(
          new java.io.ByteArrayInputStream(bytes))) {
        bytes = in.readAllBytes();
      } catch (IOException e) {
        throw new IOException(file + " is not a gzip file: " + e.getMessage(), e);
      }
    }
    try {
      return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
    } catch (CharacterCodingException e) {
      throw new IOException(file + " is not UTF-8 text (is the " + what + " file compressed or corrupt?)", e);
    }
  }
}
