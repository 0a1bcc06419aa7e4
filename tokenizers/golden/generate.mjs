// Generates the golden token ids the tokenizers module is tested against, with the reference JavaScript
// implementation of Hugging Face tokenizers and chat templates (@huggingface/transformers), from the LOCAL fixture
// files only (no model hub access).
//
//   cd tokenizers/golden && npm install --no-save --ignore-scripts @huggingface/transformers@4.3.2
//   node generate.mjs            # writes ../src/test/resources/io/kvroute/tokenizers/golden.json.gz
//
// Each case is an OpenAI request body as a client sends it (completion "prompt", or chat "messages" with content
// parts, tool_calls whose arguments are JSON strings, "tools", "chat_template_kwargs", ...). The script turns it
// into what vLLM renders, by vLLM's own rules, written out here independently of the Java code:
//   - completions: tokenizer(prompt, add_special_tokens = body.add_special_tokens ?? true);
//   - chat: text parts of a content list joined with "\n" (the "string" content format of templates that do not
//     loop over content); null content becomes ""; tool_call arguments parsed from JSON strings into objects
//     (empty -> {}); an empty tool_calls list dropped; "reasoning_content"/"reasoning" copied into both names;
//     tools dumped as {type, function: {name, description, parameters}} with absent fields as null;
//     chat_template_kwargs merged into the template's variables; add_generation_prompt defaults to true;
//     the rendered text is encoded with add_special_tokens = body.add_special_tokens ?? false, and a BOS the
//     tokenizer would add on top of one the template already wrote is not added twice.
// A case whose template raises (raise_exception) records the message instead of ids.
import { AutoTokenizer, env } from '@huggingface/transformers';
import { gzipSync } from 'node:zlib';
import { writeFileSync, mkdirSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const resources = join(here, '..', 'src', 'test', 'resources', 'io', 'kvroute', 'tokenizers');
const FAMILIES = ['qwen3', 'llama3_2'];

// transformers.js reads plain files: unpack the committed fixtures into a scratch model directory.
const scratch = join(here, 'node_modules', '.models');
for (const family of FAMILIES) {
  const dir = join(scratch, family);
  mkdirSync(dir, { recursive: true });
  const fixtures = join(resources, 'fixtures', family);
  writeFileSync(join(dir, 'tokenizer.json'), gunzipSync(readFileSync(join(fixtures, 'tokenizer.json.gz'))));
  writeFileSync(join(dir, 'tokenizer_config.json'), readFileSync(join(fixtures, 'tokenizer_config.json')));
}
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = scratch + '/';

// mulberry32: a small seeded generator, so the cases are the same on every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const pick = (r, xs) => xs[Math.floor(r() * xs.length)];

const WORDS = ['the', 'cache', 'router', 'prefix', 'token', 'worker', 'model', 'request', 'latency', 'queue',
  'Hello', 'world', 'Java', 'kvroute', 'vLLM', 'SGLang', 'block', 'hash', "don't", "it's", 'we\'ll', 'GPU',
  '42', '3.14159', '2026-12-01', 'e-mail', 'foo_bar', 'CamelCase', 'x86_64', '#include', 'λ', 'naïve', 'café'];
const CJK = ['你好', '世界', '缓存', '路由器', '令牌', '日本語', 'テスト', 'カタカナ', '한국어', '안녕하세요', '中文分词'];
const EMOJI = ['😀', '🚀', '👍🏽', '👨‍👩‍👧‍👦', '🇩🇪', '❤️', '🤖', '✅', '🧪'];
const SPACES = [' ', '  ', '   ', '\t', '\n', '\n\n', ' \n ', '\r\n', '\u00a0', '\u3000', '    \t  '];
const SPECIAL = {
  qwen3: ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>', '<|vision_pad|>'],
  llama3_2: ['<|begin_of_text|>', '<|eot_id|>', '<|start_header_id|>', '<|end_header_id|>', '<|python_tag|>',
    '<|reserved_special_token_5|>'],
};

function words(r, n, family, mix = true) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const x = r();
    if (!mix || x < 0.72) out.push(pick(r, WORDS));
    else if (x < 0.84) out.push(pick(r, CJK));
    else if (x < 0.92) out.push(pick(r, EMOJI));
    else if (x < 0.97) out.push(pick(r, ['.', ',', '!', '?', ':', ';', '"', '(', ')', '{', '}', '[', ']', '```']));
    else out.push(pick(r, SPECIAL[family]));
    out.push(r() < 0.85 ? ' ' : pick(r, SPACES));
  }
  return out.join('');
}

// @huggingface/jinja's str.strip/lstrip/rstrip ignore their chars argument (Python's strip only those chars),
// so Qwen3's reasoning split (content.split('</think>')[-1].lstrip('\n'), reasoning_content.strip('\n')) would
// differ from Python whenever whitespace other than '\n' touches </think>: assistant texts here keep </think>
// only in well-formed, trimmed <think> blocks. The Java tests check Python's semantics separately.
function assistantText(r, family, n) {
  const text = words(r, n, family);
  return family === 'qwen3' ? text.replaceAll('</think>', '</thinking>') : text;
}

// ---- vLLM's request normalization (see the header) ----
function contentText(content) {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => p.text).join('\n');
}
function normalizeMessages(messages) {
  return messages.map((m) => {
    const out = { role: m.role, content: contentText(m.content) };
    if (m.role === 'assistant') {
      if (Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
        out.tool_calls = m.tool_calls.map((c) => ({
          ...c,
          function: {
            ...c.function,
            arguments: c.function.arguments ? (typeof c.function.arguments === 'string'
              ? JSON.parse(c.function.arguments) : c.function.arguments) : {},
          },
        }));
      }
      const reasoning = m.reasoning ?? m.reasoning_content;
      if (reasoning !== undefined && reasoning !== null) {
        out.reasoning = reasoning;
        out.reasoning_content = reasoning;
      }
    }
    if (m.role === 'tool' && m.tool_call_id !== undefined) out.tool_call_id = m.tool_call_id;
    if (typeof m.name === 'string') out.name = m.name;
    return out;
  });
}
function normalizeTools(tools) {
  if (!tools) return null;
  return tools.map((t) => {
    const { type, function: f, ...extra } = t;
    const { name, description, parameters, ...fextra } = f;
    return { type: type ?? 'function', function: { name, description: description ?? null,
      parameters: parameters ?? null, ...fextra }, ...extra };
  });
}

const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Get the current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name, e.g. Zürich' },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] } } },
  { type: 'function', function: { name: 'search_docs', description: '在文档中搜索 🔍',
    parameters: { type: 'object', properties: { query: { type: 'string' }, top_k: { type: 'integer' } },
      required: ['query'] } } },
  // (no empty objects: @huggingface/jinja's tojson(indent=4) writes {} as "{\n<indent>}", Python as "{}")
  { type: 'function', function: { name: 'no_description', parameters: { type: 'object',
    properties: { flag: { type: 'boolean' } } } } },
];

function toolCall(r, i) {
  const k = Math.floor(r() * 2);
  const args = k === 0 ? { city: pick(r, ['Paris', 'Zürich', '東京', 'New York']), unit: 'celsius' }
    : { query: words(r, 3, 'qwen3', false).trim(), top_k: 1 + Math.floor(r() * 9) };
  return { id: `call_${i}`, type: 'function',
    function: { name: k === 0 ? 'get_weather' : 'search_docs', arguments: JSON.stringify(args) } };
}

function randomConversation(r, family, opts) {
  const msgs = [];
  if (opts.system) msgs.push({ role: 'system', content: words(r, 3 + Math.floor(r() * 12), family) });
  const turns = opts.turns;
  for (let t = 0; t < turns; t++) {
    const parts = r() < 0.2;
    const text = words(r, opts.userWords ?? (2 + Math.floor(r() * 30)), family);
    msgs.push({ role: 'user', content: parts
      ? [{ type: 'text', text }, { type: 'text', text: words(r, 4, family) }] : text });
    if (t === turns - 1 && !opts.endWithAssistant) break;
    const calls = opts.tools && r() < 0.5;
    if (calls) {
      const n = family === 'llama3_2' ? 1 : 1 + Math.floor(r() * 2);
      const tc = Array.from({ length: n }, (_, i) => toolCall(r, t * 10 + i));
      msgs.push({ role: 'assistant', content: family === 'qwen3' && r() < 0.5 ? assistantText(r, family, 4) : null,
        tool_calls: tc });
      for (const c of tc) {
        msgs.push({ role: 'tool', tool_call_id: c.id, content: family === 'llama3_2' && r() < 0.3
          ? `{"temperature": ${Math.floor(r() * 30)}}` : words(r, 5, family) });
      }
      msgs.push({ role: 'assistant', content: assistantText(r, family, 6) });
    } else {
      let content = assistantText(r, family, 3 + Math.floor(r() * 25));
      if (family === 'qwen3' && opts.thinkingHistory && r() < 0.5) {
        content = `<think>\n${words(r, 8, family, false).trim()}\n</think>\n\n${content}`;
      }
      const m = { role: 'assistant', content };
      if (family === 'qwen3' && opts.reasoningField && r() < 0.5) {
        m.reasoning_content = words(r, 6, family, false).trim();
      }
      msgs.push(m);
    }
  }
  return msgs;
}

function longText(r, family, targetChars) {
  let s = '';
  while (s.length < targetChars) s += words(r, 50, family) + (r() < 0.3 ? '\n\n' : ' ');
  return s;
}

const cases = [];
function completion(family, name, prompt, addSpecial) {
  const body = { model: family, prompt };
  if (addSpecial !== undefined) body.add_special_tokens = addSpecial;
  cases.push({ family, name, kind: 'completion', body });
}
function chat(family, name, body) {
  if (family === 'llama3_2' && !(body.chat_template_kwargs && body.chat_template_kwargs.date_string)) {
    // strftime_now would put the generation day into the expected text
    body = { ...body, chat_template_kwargs: { ...(body.chat_template_kwargs ?? {}), date_string: '26 Jul 2024' } };
  }
  cases.push({ family, name, kind: 'chat', body: { model: family, ...body } });
}

for (const family of FAMILIES) {
  const r = rng(family === 'qwen3' ? 20261201 : 20261202);
  const fixed = ['Hello, world!', 'The quick brown fox jumps over the lazy dog.', '', ' ', '   leading spaces',
    'trailing spaces   ', 'tabs\tand\nnewlines\r\nmixed', 'a    b\n\n\n  \t c', '你好，世界！缓存路由。',
    '日本語のテキストとカタカナ', '한국어 문장입니다', 'emoji 😀🚀👍🏽 family 👨‍👩‍👧‍👦 flag 🇩🇪',
    'code: for (int i = 0; i < n; i++) { sum += a[i]; }', 'numbers 1234567890 3.14159 -42 1e10',
    "contractions: don't, it's, we'll, they're, I'd", 'URL https://example.com/a?b=c&d=e#f',
    'naïve café résumé Ångström', 'combining e\u0301 vs \u00e9', '\u00a0nbsp\u3000ideographic space',
    'zero\u200bwidth\u200djoiner', `special ${SPECIAL[family].join(' ')} inside`, SPECIAL[family][0],
    `${SPECIAL[family][1]}${SPECIAL[family][0]}`, '\n\n\n\n', '                                ',
    'ALL CAPS SHOUTING AND lowercase', 'mixed中English混合text', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝛼𝛽𝛾', '\\ backslash \\n escaped'];
  fixed.forEach((p, i) => {
    completion(family, `completion-fixed-${i}`, p, undefined);
    completion(family, `completion-fixed-${i}-nospecial`, p, false);
  });
  for (let i = 0; i < 30; i++) completion(family, `completion-random-${i}`, words(r, 5 + Math.floor(r() * 60), family),
    r() < 0.5 ? undefined : r() < 0.5);
  completion(family, 'completion-long-8k', longText(r, family, 20000), undefined);
  completion(family, 'completion-list-of-one', [words(r, 10, family)], undefined);

  // chat: fixed shapes
  chat(family, 'chat-single-user', { messages: [{ role: 'user', content: 'Hello!' }] });
  chat(family, 'chat-system-user', { messages: [{ role: 'system', content: 'You are a helpful assistant.' },
    { role: 'user', content: 'What is KV-cache-aware routing?' }] });
  chat(family, 'chat-no-generation-prompt', { messages: [{ role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello! How can I help?' }], add_generation_prompt: false });
  chat(family, 'chat-special-text-in-user', { messages: [{ role: 'user',
    content: `pretend ${SPECIAL[family].join(' and ')} are plain text` }] });
  chat(family, 'chat-whitespace', { messages: [{ role: 'system', content: '  padded system  \n' },
    { role: 'user', content: '\n\n  lots   of\t\twhitespace  \n\n' }] });
  chat(family, 'chat-cjk-emoji', { messages: [{ role: 'user', content: '你好 😀 请解释一下缓存。' },
    { role: 'assistant', content: '好的 👍🏽' }, { role: 'user', content: '谢谢！🇩🇪' }] });
  chat(family, 'chat-content-parts', { messages: [{ role: 'user', content: [{ type: 'text', text: 'part one' },
    { type: 'text', text: 'part two' }] }] });
  chat(family, 'chat-add-special-tokens', { messages: [{ role: 'user', content: 'with BOS?' }],
    add_special_tokens: true });
  chat(family, 'chat-tools-one-call', {
    messages: [{ role: 'user', content: 'Weather in Paris?' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: '{"temperature": 21}' }],
    tools: TOOLS });
  chat(family, 'chat-tools-empty-arguments', {
    messages: [{ role: 'user', content: 'Call it with nothing' },
      { role: 'assistant', content: '', tool_calls: [{ id: 'c2', type: 'function',
        function: { name: 'no_description', arguments: '' } }] },
      { role: 'tool', tool_call_id: 'c2', content: 'ok' }, { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'Thanks' }],
    tools: TOOLS });
  chat(family, 'chat-tools-no-calls', { messages: [{ role: 'system', content: 'Use tools when needed.' },
    { role: 'user', content: 'Find the docs about routing' }], tools: TOOLS });
  chat(family, 'chat-long-8k', { messages: [{ role: 'system', content: 'Summarize.' },
    { role: 'user', content: longText(r, family, 19500) }] });
  chat(family, 'chat-long-multiturn', { messages: randomConversation(r, family,
    { system: true, turns: 12, userWords: 180, tools: false }) });
  if (family === 'qwen3') {
    for (const [name, kw] of [['thinking-on', { enable_thinking: true }], ['thinking-off', { enable_thinking: false }],
      ['thinking-absent', undefined]]) {
      chat(family, `chat-${name}`, { messages: [{ role: 'user', content: 'Think about 2+2' }],
        ...(kw ? { chat_template_kwargs: kw } : {}) });
      chat(family, `chat-${name}-history`, { messages: [{ role: 'user', content: 'q1' },
        { role: 'assistant', content: '<think>\nreasoning one\n</think>\n\nanswer one' },
        { role: 'user', content: 'q2' }], ...(kw ? { chat_template_kwargs: kw } : {}) });
    }
    chat(family, 'chat-reasoning-content-field', { messages: [{ role: 'user', content: 'q' },
      { role: 'assistant', content: 'a', reasoning_content: 'because' }, { role: 'user', content: 'tool?' },
      { role: 'assistant', content: 'final', reasoning_content: 'kept after the last query' }],
      add_generation_prompt: false });
    chat(family, 'chat-tool-response-as-user', { messages: [{ role: 'user', content: 'start' },
      { role: 'assistant', content: 'calling', tool_calls: [toolCall(r, 1), toolCall(r, 2)] },
      { role: 'tool', content: 'r1' }, { role: 'tool', content: 'r2' },
      { role: 'user', content: '<tool_response>\nlooks like a tool\n</tool_response>' }], tools: TOOLS });
    chat(family, 'chat-second-system', { messages: [{ role: 'system', content: 's1' }, { role: 'user', content: 'u' },
      { role: 'system', content: 's2' }, { role: 'user', content: 'u2' }] });
    chat(family, 'chat-developer-role', { messages: [{ role: 'developer', content: 'dev note' },
      { role: 'user', content: 'u' }] });
  } else {
    chat(family, 'chat-date-default', { messages: [{ role: 'user', content: 'today?' }],
      chat_template_kwargs: { date_string: '26 Jul 2024' } });
    chat(family, 'chat-tools-in-system', { messages: [{ role: 'system', content: 'sys' },
      { role: 'user', content: 'Weather?' }], tools: TOOLS,
      chat_template_kwargs: { tools_in_user_message: false } });
    chat(family, 'chat-ipython-object-content', { messages: [{ role: 'user', content: 'run' },
      { role: 'assistant', content: null, tool_calls: [toolCall(r, 3)] },
      { role: 'ipython', content: 'plain string output' }], tools: TOOLS });
    chat(family, 'error-two-tool-calls', { messages: [{ role: 'user', content: 'two' },
      { role: 'assistant', content: null, tool_calls: [toolCall(r, 4), toolCall(r, 5)] }], tools: TOOLS });
    chat(family, 'error-tools-without-user', { messages: [{ role: 'system', content: 'only system' }], tools: TOOLS });
  }

  // chat: random conversations
  for (let i = 0; i < 70; i++) {
    const tools = r() < 0.35;
    const opts = { system: r() < 0.6, turns: 1 + Math.floor(r() * 5), tools, thinkingHistory: true,
      reasoningField: true, endWithAssistant: r() < 0.15 };
    const body = { messages: randomConversation(r, family, opts) };
    if (tools) body.tools = TOOLS.slice(0, 1 + Math.floor(r() * 3));
    if (opts.endWithAssistant || r() < 0.1) body.add_generation_prompt = !opts.endWithAssistant && r() < 0.5;
    const kw = {};
    if (family === 'qwen3' && r() < 0.6) kw.enable_thinking = r() < 0.5;
    if (family === 'llama3_2') kw.date_string = pick(r, ['26 Jul 2024', '01 Dec 2026', '29 Feb 2028']);
    if (Object.keys(kw).length) body.chat_template_kwargs = kw;
    chat(family, `chat-random-${i}`, body);
  }
  // multi-turn growth: the same conversation one message at a time (the prefix cache's workload)
  const grow = randomConversation(r, family, { system: true, turns: 8, tools: family === 'qwen3', endWithAssistant: true });
  for (let n = 1; n <= grow.length; n++) {
    const messages = grow.slice(0, n);
    if (messages[messages.length - 1].role === 'tool' || (family === 'llama3_2' && messages[0].role === 'system'
      && messages.length === 1)) continue;
    const kw = family === 'llama3_2' ? { chat_template_kwargs: { date_string: '01 Dec 2026' } } : {};
    chat(family, `chat-grow-${n}`, { messages, ...(family === 'qwen3' ? { tools: TOOLS } : {}), ...kw });
  }
}

const tokenizers = {};
for (const family of FAMILIES) tokenizers[family] = await AutoTokenizer.from_pretrained(family);

const out = [];
for (const c of cases) {
  const tok = tokenizers[c.family];
  const b = c.body;
  const rec = { family: c.family, name: c.name, kind: c.kind, body: b };
  if (c.kind === 'completion') {
    const prompt = Array.isArray(b.prompt) ? b.prompt[0] : b.prompt;
    rec.text = prompt;
    rec.ids = tok.encode(prompt, { add_special_tokens: b.add_special_tokens ?? true });
  } else {
    const messages = normalizeMessages(b.messages);
    const tools = normalizeTools(b.tools);
    let text;
    try {
      text = tok.apply_chat_template(messages, { tokenize: false, tools,
        add_generation_prompt: b.add_generation_prompt ?? true, ...(b.chat_template_kwargs ?? {}) });
    } catch (e) {
      rec.error = String(e.message ?? e);
      out.push(rec);
      continue;
    }
    rec.text = text;
    let ids = tok.encode(text, { add_special_tokens: b.add_special_tokens ?? false });
    const bos = tok.bos_token;
    if (bos && text.startsWith(bos) && ids.length > 1 && ids[0] === ids[1] && ids[0] === tok.encode(bos, { add_special_tokens: false })[0]) {
      ids = ids.slice(1);
    }
    rec.ids = ids;
  }
  out.push(rec);
}
const json = JSON.stringify({ generator: 'tokenizers/golden/generate.mjs', transformers: '@huggingface/transformers@4.3.2',
  cases: out });
writeFileSync(join(resources, 'golden.json.gz'), gzipSync(Buffer.from(json, 'utf8'), { level: 9 }));
const counts = {};
for (const c of out) counts[`${c.family}/${c.kind}${c.error ? '/error' : ''}`] = (counts[`${c.family}/${c.kind}${c.error ? '/error' : ''}`] ?? 0) + 1;
console.log(out.length, 'cases', counts, 'max ids', Math.max(...out.map((c) => c.ids?.length ?? 0)));
if (existsSync(scratch)) rmSync(scratch, { recursive: true });
