package io.kvroute.tokenizers;

import static java.lang.System.Logger.Level.INFO;

import io.kvroute.internal.Checks;
import io.kvroute.openai.ChatMessage;
import io.kvroute.transport.okhttp.Tokenizer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import org.jspecify.annotations.Nullable;

/**
 * A {@link Tokenizer} that runs in the gateway's JVM: a Hugging Face {@code tokenizer.json} and the model's chat
 * template, giving the token ids vLLM computes for the same {@code /v1/completions} or {@code /v1/chat/completions}
 * body; thread-safe: any number of threads may tokenize at once (the native tokenizer is immutable, renders are
 * independent, the prefix cache takes a short lock).
 *
 * <pre>{@code
 * HfTokenizer tokenizer = HfTokenizer.load(Path.of("/models/Qwen3-8B"));  // the directory vLLM serves
 * int[] tokens = tokenizer.tokenizeRequest(requestBody);                    // completion or chat body
 * }</pre>
 *
 * <p>vLLM's special-token rules: a completion prompt is encoded with {@code add_special_tokens} (default true: the
 * tokenizer's post-processor adds BOS where the model has one); a chat is rendered through the template with
 * {@code add_generation_prompt} (default true), {@code tools} and {@code chat_template_kwargs}, and the rendered text
 * is encoded with {@code add_special_tokens} (default false, since templates write their own BOS); when a request
 * asks for special tokens and the template already wrote the BOS, it is not added twice.
 *
 * <p>Multi-turn chats re-use the ids of the longest earlier rendering that the new one extends up to a segment
 * boundary (right after a special token such as {@code <|im_start|>}), encoding only the new text; the result is
 * the same as encoding the whole text (see {@link Builder#prefixCacheBytes}).
 *
 * <p>One instance serves one model: the {@code model} of a call or body is not checked (keep one instance per
 * served model). Nothing is downloaded: the native library comes from DJL's jar (see the module README).
 */
public final class HfTokenizer implements Tokenizer, AutoCloseable {
  /** The default bound of the prefix cache: 64 MiB of prefix text and ids. */
  public static final long DEFAULT_PREFIX_CACHE_BYTES = 64L << 20;
  /** The roles a chat message may have unless {@link Builder#roles} says otherwise. */
  public static final Set<String> DEFAULT_ROLES = Set.of("system", "developer", "user", "assistant", "tool");
  private static final System.Logger logger = System.getLogger(HfTokenizer.class.getName());

  private final TextEncoder tokenizer;
  private final @Nullable ChatTemplate template;
  private final @Nullable ChatTemplate toolTemplate;
  private final Map<String, String> specialTokens;
  private final @Nullable String bosToken;
  private final int bosId;
  /** The special tokens a sequence gets from add_bos_token/add_eos_token, or null for tokenizer.json's own. */
  private final int @Nullable [] specialPrefix;
  private final int @Nullable [] specialSuffix;
  private final @Nullable PrefixCache prefixCache;
  private final Set<String> roles;
  private final Clock clock;
  private final String description;

  /**
   * The {@code tokenizer_class} values whose transformers implementation rebuilds the post-processor from
   * {@code add_bos_token} (default true) and {@code add_eos_token} (default false) when it loads
   * ({@code LlamaTokenizerFast.update_post_processor} and the classes that copy it); for other classes the
   * {@code tokenizer.json} post-processor stands as written.
   */
  static final Set<String> BOS_EOS_CLASSES = Set.of("LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer",
      "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast");

  private HfTokenizer(Builder b, TokenizerFiles files, TextEncoder tokenizer) throws IOException {
    this.tokenizer = tokenizer;
    String source = files.templateSource != null ? files.templateSource : "tokenizer_config.json";
    String defaultSource = files.chatTemplates.get("default");
    if (defaultSource == null && files.chatTemplates.size() == 1) {
      defaultSource = files.chatTemplates.values().iterator().next();
    }
    this.template = defaultSource == null ? null : new ChatTemplate(defaultSource, "the chat template of " + source);
    String toolSource = files.chatTemplates.get("tool_use");
    this.toolTemplate = toolSource == null ? null
        : new ChatTemplate(toolSource, "the tool_use chat template of " + source);
    this.specialTokens = Map.copyOf(files.specialTokens);
    this.bosToken = files.specialTokens.get("bos_token");
    int bos = -1;
    for (TokenizerFiles.AddedToken t : files.addedTokens) {
      if (t.content().equals(bosToken)) {
        bos = t.id();
      }
    }
    this.bosId = bos;
    if (files.tokenizerClass != null && BOS_EOS_CLASSES.contains(files.tokenizerClass)) {
      boolean addBos = files.addBosToken == null || files.addBosToken;
      boolean addEos = files.addEosToken != null && files.addEosToken;
      this.specialPrefix = addBos ? new int[] {tokenId(files, tokenizer, "bos_token", "add_bos_token")}
          : new int[0];
      this.specialSuffix = addEos ? new int[] {tokenId(files, tokenizer, "eos_token", "add_eos_token")}
          : new int[0];
    } else {
      this.specialPrefix = null;
      this.specialSuffix = null;
    }
    boolean cacheable = b.prefixCacheBytes > 0 && PrefixCache.usable(files);
    if (b.prefixCacheBytes > 0 && !cacheable) {
      logger.log(INFO, () -> files.tokenizerJson + ": the prefix cache is off, since this tokenizer's pieces "
          + "between special tokens are not encoded independently");
    }
    this.prefixCache = cacheable ? new PrefixCache(files.addedTokens, b.prefixCacheBytes) : null;
    this.roles = Set.copyOf(b.roles);
    this.clock = b.clock;
    this.description = "HfTokenizer{" + files.tokenizerJson + ", " + tokenizer.kind() + " encoder"
        + (template == null ? ", no chat template" : "") + "}";
  }

  /** The id of a special token the config names, as transformers resolves it for update_post_processor. */
  private static int tokenId(TokenizerFiles files, TextEncoder encoder, String key, String flag)
      throws IOException {
    String content = files.specialTokens.get(key);
    if (content == null) {
      throw new IOException(files.tokenizerJson.resolveSibling("tokenizer_config.json") + ": " + flag
          + " is true but " + key + " is not set");
    }
    for (TokenizerFiles.AddedToken t : files.addedTokens) {
      if (t.content().equals(content)) {
        return t.id();
      }
    }
    int[] ids = encoder.encode(content, false);
    if (ids.length != 1) {
      throw new IOException(files.tokenizerJson + ": the " + key + " " + content + " is not one token");
    }
    return ids[0];
  }

  /** Encodes with the post-processor add_bos_token/add_eos_token define, if they do. */
  private int[] encode(String text, boolean addSpecialTokens) {
    if (!addSpecialTokens || specialPrefix == null || specialSuffix == null) {
      return tokenizer.encode(text, addSpecialTokens);
    }
    int[] body = tokenizer.encode(text, false);
    int[] ids = new int[specialPrefix.length + body.length + specialSuffix.length];
    System.arraycopy(specialPrefix, 0, ids, 0, specialPrefix.length);
    System.arraycopy(body, 0, ids, specialPrefix.length, body.length);
    System.arraycopy(specialSuffix, 0, ids, specialPrefix.length + body.length, specialSuffix.length);
    return ids;
  }

  /**
   * Loads a tokenizer from a model directory holding {@code tokenizer.json} (and usually
   * {@code tokenizer_config.json} with the chat template, or a {@code chat_template.jinja}), or from a
   * {@code tokenizer.json} file with its siblings.
   *
   * @param path the directory vLLM serves the model from (a {@code tokenizer.json.gz} stands in for a missing
   *     {@code tokenizer.json}), or its {@code tokenizer.json}
   * @return the tokenizer
   * @throws IOException naming the file and the problem if {@code tokenizer.json} is missing or corrupt, a config
   *     is not valid JSON, or the native library cannot be loaded
   * @throws ChatTemplateException naming the construct if the chat template uses a Jinja feature this module
   *     cannot render
   */
  public static HfTokenizer load(Path path) throws IOException {
    return newBuilder(path).build();
  }

  /**
   * Returns a builder for a model directory or a {@code tokenizer.json} (see {@link #load}).
   *
   * @param path the directory or file
   * @return a builder that finds {@code tokenizer_config.json} and {@code chat_template.jinja} next to it
   */
  public static Builder newBuilder(Path path) {
    return new Builder(Objects.requireNonNull(path, "path"));
  }

  /**
   * {@inheritDoc}
   *
   * <p>As {@code /v1/completions} does: with the tokenizer's special tokens (BOS where the model has one).
   */
  @Override
  public int[] tokenize(@Nullable String model, String prompt) {
    return tokenize(prompt, true);
  }

  /**
   * Encodes a completion prompt.
   *
   * @param prompt the text
   * @param addSpecialTokens whether the tokenizer's post-processor adds its special tokens (BOS, ...)
   * @return the token ids
   */
  public int[] tokenize(String prompt, boolean addSpecialTokens) {
    Objects.requireNonNull(prompt, "prompt");
    return encode(checkUtf16(prompt, "the prompt"), addSpecialTokens);
  }

  /** Refuses unpaired surrogates, which have no UTF-8 form (vLLM's Python cannot encode them either). */
  private static String checkUtf16(String text, String what) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isSurrogate(c)) {
        if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
          i++;
        } else {
          throw new IllegalArgumentException(what + " holds an unpaired UTF-16 surrogate at index " + i);
        }
      }
    }
    return text;
  }

  /**
   * {@inheritDoc}
   *
   * @throws ChatTemplateException if the template raises or fails on the messages
   * @throws IllegalStateException if the tokenizer has no chat template
   */
  @Override
  public int[] tokenizeChat(@Nullable String model, List<ChatMessage> messages) {
    Objects.requireNonNull(messages, "messages");
    if (messages.isEmpty()) {
      throw new IllegalArgumentException("messages must not be empty");
    }
    List<Object> raw = new ArrayList<>(messages.size());
    for (int i = 0; i < messages.size(); i++) {
      ChatMessage m = Objects.requireNonNull(messages.get(i), "messages[" + i + "]");
      Map<String, Object> map = new LinkedHashMap<>();
      map.put("role", m.role());
      map.put("content", m.content());
      raw.add(map);
    }
    Map<String, Object> body = new LinkedHashMap<>();
    body.put("messages", raw);
    OpenAiRequests.Chat chat = OpenAiRequests.chat(body, requireTemplate(null).openAiContent(), roles);
    return encodeChat(chat, false);
  }

  /**
   * {@inheritDoc}
   *
   * <p>This implementation reads the whole body as vLLM does: content parts, {@code tool_calls},
   * {@code tools}, {@code add_generation_prompt}, {@code continue_final_message}, {@code chat_template_kwargs}
   * (for example Qwen3's {@code enable_thinking}) and {@code add_special_tokens}.
   *
   * @throws IllegalArgumentException naming the member if the body is malformed: not JSON, an unknown role, a
   *     content part whose text is not a string, ...
   * @throws ChatTemplateException if the template raises (for example "roles must alternate") or fails
   * @throws UnsupportedOperationException if the body holds images, audio or video, whose placeholder tokens only
   *     the engine knows, or its own {@code chat_template}
   */
  @Override
  public int[] tokenizeRequest(byte[] requestBody) {
    Objects.requireNonNull(requestBody, "requestBody");
    OpenAiRequests.Request request = parse(requestBody);
    if (request.ids() != null) {
      return request.ids();
    }
    if (request.prompt() != null) {
      return encode(checkUtf16(request.prompt(), "the prompt"), request.addSpecialTokens());
    }
    return encodeChat(Objects.requireNonNull(request.chat()), request.addSpecialTokens());
  }

  /**
   * Renders a chat completion body through the chat template, as vLLM does before encoding it.
   *
   * @param chatRequestBody a {@code /v1/chat/completions} body
   * @return the prompt text the engine will encode
   * @throws IllegalArgumentException if the body is not a chat request (see {@link #tokenizeRequest})
   */
  public String applyChatTemplate(byte[] chatRequestBody) {
    OpenAiRequests.Request request = parse(chatRequestBody);
    if (request.chat() == null) {
      throw new IllegalArgumentException("the request body has no messages");
    }
    return render(request.chat());
  }

  private OpenAiRequests.Request parse(byte[] body) {
    ChatTemplate any = template != null ? template : toolTemplate;
    return OpenAiRequests.parse(body, any != null && any.openAiContent(), roles);
  }

  private ChatTemplate requireTemplate(@Nullable List<Object> tools) {
    ChatTemplate t = tools != null && toolTemplate != null ? toolTemplate : template;
    if (t == null) {
      t = toolTemplate;
    }
    if (t == null) {
      throw new IllegalStateException(description + " has no chat template: give tokenizer_config.json with a "
          + "chat_template, or a chat_template.jinja");
    }
    return t;
  }

  String render(OpenAiRequests.Chat chat) {
    ChatTemplate t = requireTemplate(chat.tools());
    Map<String, Object> vars = new LinkedHashMap<>(specialTokens);
    vars.putAll(chat.kwargs());
    vars.put("messages", chat.messages());
    vars.put("tools", chat.tools());
    vars.put("documents", null);
    vars.put("add_generation_prompt", chat.addGenerationPrompt());
    String text = t.render(vars, clock);
    return chat.continueFinalMessage() ? continueFinal(text, chat.messages()) : text;
  }

  /** Cuts the rendering after the final message's text, as transformers does for continue_final_message. */
  private static String continueFinal(String rendered, List<Map<String, Object>> messages) {
    Object content = messages.get(messages.size() - 1).get("content");
    String last = null;
    if (content instanceof String s) {
      last = s;
    } else if (content instanceof List<?> parts) {
      for (int i = parts.size() - 1; i >= 0 && last == null; i--) {
        if (parts.get(i) instanceof Map<?, ?> p && p.get("text") instanceof String s) {
          last = s;
        }
      }
    }
    if (last == null) {
      throw new IllegalArgumentException("continue_final_message is set but the final message has no text");
    }
    String stripped = PyCompat.strip(last, null, true, true);
    int at = rendered.lastIndexOf(stripped);
    if (at < 0) {
      throw new IllegalArgumentException("continue_final_message is set but the final message does not appear "
          + "in the rendered chat");
    }
    String lstripped = PyCompat.strip(last, null, true, false);
    if (rendered.startsWith(last, at) && lstripped.equals(last)) {
      return rendered.substring(0, at + lstripped.length());
    }
    return rendered.substring(0, at + stripped.length());
  }

  private int[] encodeChat(OpenAiRequests.Chat chat, boolean addSpecialTokens) {
    String text = checkUtf16(render(chat), "the rendered chat");
    if (!addSpecialTokens) {
      return prefixCache != null ? prefixCache.encode(text, s -> tokenizer.encode(s, false))
          : tokenizer.encode(text, false);
    }
    int[] ids = encode(text, true);
    if (bosToken != null && bosId >= 0 && text.startsWith(bosToken) && ids.length > 1 && ids[0] == bosId
        && ids[1] == bosId) {
      return Arrays.copyOfRange(ids, 1, ids.length); // the template wrote the BOS already
    }
    return ids;
  }

  /** The prefix cache, or null when the tokenizer's files make it inexact or it was turned off. */
  @Nullable PrefixCache prefixCache() {
    return prefixCache;
  }

  /** Which encoder runs the {@code tokenizer.json}: "java" ({@link Engine#JAVA}) or "native". */
  String encoderKind() {
    return tokenizer.kind();
  }

  /** Frees the native tokenizer, if any; later calls throw {@link IllegalStateException}. */
  @Override
  public void close() {
    tokenizer.close();
  }

  @Override
  public String toString() {
    return description;
  }

  /**
   * Which implementation encodes text with the {@code tokenizer.json} (an enum: immutable, thread-safe); both give
   * the same ids, id for id, where both apply.
   */
  public enum Engine {
    /** {@link #JAVA} when it supports the {@code tokenizer.json}, else {@link #NATIVE} (the default). */
    AUTO,
    /**
     * The pure-Java byte-level BPE encoder, for the GPT-4-style configuration of Qwen2/Qwen3 and Llama 3 (the
     * module README lists what it supports); refused with an {@code IOException} naming the component otherwise.
     */
    JAVA,
    /** The Hugging Face {@code tokenizers} library (Rust) through DJL's native bindings, for any tokenizer.json. */
    NATIVE
  }

  /** Configures an {@link HfTokenizer}; not thread-safe. */
  public static final class Builder {
    private final Path path;
    private @Nullable Path config;
    private boolean configSet;
    private @Nullable Path chatTemplate;
    private boolean chatTemplateSet;
    private long prefixCacheBytes = DEFAULT_PREFIX_CACHE_BYTES;
    private Set<String> roles = DEFAULT_ROLES;
    private Clock clock = Clock.systemDefaultZone();
    private Engine engine = Engine.AUTO;

    private Builder(Path path) {
      this.path = path;
    }

    /**
     * The {@code tokenizer_config.json} to read the chat template and special tokens from (default: the one next
     * to {@code tokenizer.json}, if any).
     *
     * @param config the file
     * @return this builder
     */
    public Builder tokenizerConfig(Path config) {
      this.config = Objects.requireNonNull(config, "config");
      this.configSet = true;
      return this;
    }

    /**
     * A Jinja chat template file that replaces the config's, as vLLM's {@code --chat-template} does (default: a
     * {@code chat_template.jinja} next to {@code tokenizer.json}, if any).
     *
     * @param chatTemplate the file
     * @return this builder
     */
    public Builder chatTemplate(Path chatTemplate) {
      this.chatTemplate = Objects.requireNonNull(chatTemplate, "chatTemplate");
      this.chatTemplateSet = true;
      return this;
    }

    /**
     * The bound of the multi-turn prefix cache in bytes of prefix text and ids (default
     * {@link #DEFAULT_PREFIX_CACHE_BYTES}); 0 turns it off.
     *
     * @param prefixCacheBytes the bound
     * @return this builder
     * @throws IllegalArgumentException if negative
     */
    public Builder prefixCacheBytes(long prefixCacheBytes) {
      this.prefixCacheBytes = Checks.notNegative("prefixCacheBytes", prefixCacheBytes);
      return this;
    }

    /**
     * The roles a chat message may have (default {@link #DEFAULT_ROLES}); others are refused with an error naming
     * them. Add a model's own roles here, for example Llama 3's {@code ipython}.
     *
     * @param roles the roles
     * @return this builder
     * @throws IllegalArgumentException if empty
     */
    public Builder roles(Set<String> roles) {
      if (roles.isEmpty()) {
        throw new IllegalArgumentException("roles must not be empty");
      }
      this.roles = new TreeSet<>(roles);
      return this;
    }

    /**
     * The clock of the templates' {@code strftime_now} (default: the system clock in the default zone).
     *
     * @param clock the clock
     * @return this builder
     */
    public Builder clock(Clock clock) {
      this.clock = Objects.requireNonNull(clock, "clock");
      return this;
    }

    /**
     * Which encoder runs the {@code tokenizer.json} (default {@link Engine#AUTO}: the pure-Java one where it
     * applies, the native library otherwise).
     *
     * @param engine the encoder
     * @return this builder
     */
    public Builder engine(Engine engine) {
      this.engine = Objects.requireNonNull(engine, "engine");
      return this;
    }

    /**
     * Reads the files, builds the encoder (loading the native library if it is the one) and parses the chat
     * template.
     *
     * @return the tokenizer
     * @throws IOException naming the file if {@code tokenizer.json} is missing or corrupt, a config is not valid
     *     JSON, or the native library cannot be loaded
     * @throws ChatTemplateException naming the construct if the template uses a Jinja feature this module cannot
     *     render
     */
    public HfTokenizer build() throws IOException {
      Path plain = Files.isDirectory(path) ? path.resolve("tokenizer.json") : path;
      Path gz = path.resolve("tokenizer.json.gz"); // a gzip-compressed copy, as this repository's fixtures
      Path json = Files.isDirectory(path) && !Files.exists(plain) && Files.isRegularFile(gz) ? gz : plain;
      if (!Files.exists(json)) {
        throw new NoSuchFileException(json.toString(), null, Files.isDirectory(path)
            ? "the model directory has no tokenizer.json" : "the tokenizer.json file does not exist");
      }
      Path dir = json.toAbsolutePath().getParent();
      Path cfg = configSet ? config : dir == null ? null : existing(dir.resolve("tokenizer_config.json"));
      Path tpl = chatTemplateSet ? chatTemplate : dir == null ? null : existing(dir.resolve("chat_template.jinja"));
      TokenizerFiles files = TokenizerFiles.read(json, cfg, tpl);
      TextEncoder encoder = null;
      if (engine != Engine.NATIVE) {
        ByteLevelBpe.Fallback fallback = engine == Engine.JAVA ? ByteLevelBpe.REFUSE
            : new LazyNative(files.tokenizerJsonText, json);
        ByteLevelBpe.Result java = ByteLevelBpe.create(files.tokenizerJsonText, files.addedTokens, fallback);
        if (java.encoder() == null && engine == Engine.JAVA) {
          throw new IOException(json + ": the pure-Java encoder does not support this tokenizer.json: "
              + java.unsupported());
        }
        if (java.encoder() == null) {
          logger.log(INFO, () -> json + ": encoding with the native tokenizers library, since the pure-Java "
              + "encoder does not support it: " + java.unsupported());
        }
        encoder = java.encoder();
      }
      if (encoder == null) {
        encoder = NativeTokenizer.load(files.tokenizerJsonText, json);
      }
      try {
        return new HfTokenizer(this, files, encoder);
      } catch (IOException | RuntimeException e) {
        encoder.close();
        throw e;
      }
    }

    /** Loads the native library the first time a text needs it; thread-safe. */
    private static final class LazyNative implements ByteLevelBpe.Fallback {
      private final String json;
      private final Path source;
      private volatile @Nullable NativeTokenizer tokenizer;

      LazyNative(String json, Path source) {
        this.json = json;
        this.source = source;
      }

      @Override
      public int[] encode(String text, boolean addSpecialTokens, int codePoint) {
        NativeTokenizer t = tokenizer;
        if (t == null) {
          synchronized (this) {
            t = tokenizer;
            if (t == null) {
              try {
                t = NativeTokenizer.load(json, source);
              } catch (IOException e) {
                throw new UnsupportedOperationException(String.format("the text holds U+%04X, which the "
                    + "pure-Java encoder's Unicode 13.0 tables do not know, and the native library does not load: "
                    + "%s", codePoint, e.getMessage()), e);
              }
              logger.log(INFO, () -> source + ": the native tokenizers library is loaded for text holding code "
                  + "points newer than Unicode 13.0");
              tokenizer = t;
            }
          }
        }
        return t.encode(text, addSpecialTokens);
      }

      @Override
      public synchronized void close() {
        NativeTokenizer t = tokenizer;
        if (t != null) {
          t.close();
        }
      }
    }

    private static @Nullable Path existing(Path p) {
      return Files.isRegularFile(p) ? p : null;
    }
  }
}
