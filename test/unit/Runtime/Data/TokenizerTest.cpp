//===- TokenizerTest.cpp - runtime/data/Tokenizer against a reference ----===//
//
// The C++ tokenizers against Inputs/bpe_reference.py (an independent
// Python implementation: Python's `re` for the regexes, GPT-2's encoder.py
// for BPE, unicodedata for NFC) on the fixtures Inputs/make_tokenizers.py
// trained on models/data/corpus.txt, plus hand-checked splits and errors.
//
//===----------------------------------------------------------------------===//

#include "data/Tokenizer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>

using namespace titan::rt;

namespace {

const std::string kInputs = TITAN_TOKENIZER_INPUTS;

std::string input(const std::string &name) { return kInputs + "/" + name; }

/// Runs `bpe_reference.py MODE ARG TEXTS.json` on `texts`; its stdout.
std::string runReference(const std::string &mode, const std::string &arg,
                         const std::vector<std::string> &texts) {
  llvm::SmallString<128> path;
  EXPECT_FALSE(llvm::sys::fs::createTemporaryFile("texts", "json", path));
  {
    llvm::json::Array array;
    for (const std::string &t : texts)
      array.push_back(t);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << llvm::json::Value(std::move(array));
  }
  std::string command = std::string(TITAN_PYTHON) + " " +
                        input("bpe_reference.py") + " " + mode + " '" + arg +
                        "' " + std::string(path);
  std::string out;
  FILE *pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0) << command;
  llvm::sys::fs::remove(path);
  return out;
}

std::vector<std::vector<int64_t>>
referenceIds(const std::string &tokenizer,
             const std::vector<std::string> &texts) {
  std::string out = runReference("encode", tokenizer, texts);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(out);
  EXPECT_TRUE(bool(v)) << out;
  std::vector<std::vector<int64_t>> result;
  if (!v) {
    llvm::consumeError(v.takeError());
    return result;
  }
  for (const llvm::json::Value &ids : *v->getAsArray()) {
    result.emplace_back();
    for (const llvm::json::Value &id : *ids.getAsArray())
      result.back().push_back(*id.getAsInteger());
  }
  return result;
}

std::vector<std::vector<std::string>>
referenceSplits(const std::string &pattern,
                const std::vector<std::string> &texts) {
  std::string out = runReference("split", pattern, texts);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(out);
  EXPECT_TRUE(bool(v)) << out;
  std::vector<std::vector<std::string>> result;
  if (!v) {
    llvm::consumeError(v.takeError());
    return result;
  }
  for (const llvm::json::Value &pieces : *v->getAsArray()) {
    result.emplace_back();
    for (const llvm::json::Value &p : *pieces.getAsArray())
      result.back().push_back(p.getAsString()->str());
  }
  return result;
}

std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  EXPECT_TRUE(bool(buffer)) << path;
  return buffer ? (*buffer)->getBuffer().str() : "";
}

/// Texts that exercise every branch of the three regexes.
std::vector<std::string> handTexts() {
  return {
      "Hello world",
      "The lighthouse keeper woke before the sun.",
      " lighthouse keeper",
      "I'm sure you're right; they've said it's WE'LL and He'D and 'S 'Re.",
      "'sam 'tis o'clock ''s 'ſ 'ſo it'ſ IT'S it'Ll",
      "eee llll lll lllll ooooo seeeee keeper's  tee-hee it'ſo",
      "a \x1c\x1c\u0085b \u0085\u0085c \x1c",
      "12345 1234567 3.14159 -42 +7e10 ٣٤٥ ½ Ⅻ",
      "café naïve résumé Ångström façade",
      "cafe\u0301 decomposed e\u0301 and Hangul \u1100\u1161\u11A8 가",
      "東京は日本の首都です。北京欢迎你！",
      "emoji 👍🏽 🎉🎉 👨‍👩‍👧 and flags 🇫🇷",
      "a   b\t\tc  \n\n  d   ",
      "line one\nline two\r\nline three\n\n\nend\n",
      "   leading spaces",
      "trailing spaces   ",
      "\n",
      " ",
      "",
      "x",
      "!!!???... ,,, ---",
      " !x !\n! \n",
      "tabs\tand\u00a0nbsp\u3000ideographic\u2028sep\u001cfs",
      "Hello<|end_of_text|>world<|begin_of_text|> next",
      "<|begin_of_text|><|begin_of_text|>",
      "almost <|end_of special <|end_of_text| and <|eot_id|>",
      "<|im_start|>user\nhi<|im_end|>\n<|endoftext|>",
      "mixed123abc456 abc_def snake_case CamelCase x1y2z3",
      "ｆｕｌｌｗｉｄｔｈ ﬁ ligature Ω ℃",
  };
}

/// Random strings over characters that matter to the regexes.
std::vector<std::string> fuzzTexts(unsigned seed, int count) {
  static const std::vector<std::string> alphabet = {"a",
                                                    "b",
                                                    "Z",
                                                    "é",
                                                    "e\u0301",
                                                    "\u0323",
                                                    "ß",
                                                    "ſ",
                                                    "日",
                                                    "本",
                                                    "가",
                                                    "\u1100",
                                                    "\u1161",
                                                    "😀",
                                                    "👍🏽",
                                                    "0",
                                                    "7",
                                                    "٣",
                                                    "½",
                                                    " ",
                                                    " ",
                                                    "  ",
                                                    "\t",
                                                    "\n",
                                                    "\r",
                                                    "\r\n",
                                                    "\u00a0",
                                                    "\u3000",
                                                    "'",
                                                    "'s",
                                                    "'S",
                                                    "'ll",
                                                    "'re",
                                                    "'VE",
                                                    "!",
                                                    ".",
                                                    ",",
                                                    "-",
                                                    "_",
                                                    "<|end_of_text|>",
                                                    "<|begin_of_text|>",
                                                    "<|",
                                                    "|>",
                                                    "<|im_end|>",
                                                    "the",
                                                    " the",
                                                    "keeper",
                                                    " lighthouse",
                                                    "123",
                                                    "e",
                                                    "l",
                                                    "o",
                                                    "it",
                                                    "ee"};
  std::mt19937 rng(seed);
  std::vector<std::string> texts;
  for (int i = 0; i < count; ++i) {
    std::string t;
    int n = std::uniform_int_distribution<int>(0, 24)(rng);
    for (int k = 0; k < n; ++k)
      t += alphabet[std::uniform_int_distribution<size_t>(0, alphabet.size() -
                                                                 1)(rng)];
    texts.push_back(t);
  }
  return texts;
}

std::vector<std::string> corpusTexts() {
  std::string corpus = readFile(TITAN_CORPUS);
  std::vector<std::string> texts = {corpus};
  size_t start = 0;
  for (size_t i = 0; i < corpus.size(); ++i)
    if (corpus[i] == '\n') {
      texts.push_back(corpus.substr(start, i + 1 - start));
      start = i + 1;
    }
  return texts;
}

std::vector<std::string> allTexts() {
  std::vector<std::string> texts = handTexts();
  for (std::string &t : fuzzTexts(7, 400))
    texts.push_back(std::move(t));
  for (std::string &t : corpusTexts())
    texts.push_back(std::move(t));
  return texts;
}

std::unique_ptr<BpeTokenizer> load(const std::string &path) {
  std::unique_ptr<BpeTokenizer> tok;
  Status s = BpeTokenizer::load(path, tok);
  EXPECT_TRUE(s.ok()) << s.getMessage();
  return tok;
}

void expectMatchesReference(const std::string &path) {
  std::unique_ptr<BpeTokenizer> tok = load(path);
  ASSERT_TRUE(tok);
  std::vector<std::string> texts = allTexts();
  std::vector<std::vector<int64_t>> expected = referenceIds(path, texts);
  ASSERT_EQ(expected.size(), texts.size());
  int failures = 0;
  for (size_t i = 0; i < texts.size() && failures < 5; ++i) {
    std::vector<int64_t> got = tok->encode(texts[i]);
    EXPECT_EQ(got, expected[i]) << "text " << i << ": '" << texts[i] << "'";
    failures += got != expected[i];
  }
}

} // namespace

TEST(ByteTokenizer, BytesAndSpecialIds) {
  ByteTokenizer tok;
  EXPECT_EQ(tok.encode("a\xC3\xA9\n"),
            (std::vector<int64_t>{97, 0xC3, 0xA9, 10}));
  EXPECT_EQ(tok.bosId(), 256);
  EXPECT_EQ(tok.eosId(), 257);
  EXPECT_EQ(tok.vocabSize(), 258);
  EXPECT_EQ(tok.decode({104, 105, 256, 257}), "hi");
  std::vector<int64_t> ids = {1};
  tok.encode("b", ids);
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 98}));

  std::unique_ptr<Tokenizer> loaded;
  ASSERT_TRUE(loadTokenizer("", loaded).ok());
  EXPECT_EQ(loaded->vocabSize(), 258);
}

// Splits worked out by hand from the regexes.
TEST(PreTokenizer, HandCheckedSplits) {
  using V = std::vector<std::string_view>;
  std::string text = "I'm 12345 apples!!\n\n  ok";
  EXPECT_EQ(splitPreTokens("llama3", text),
            (V{"I", "'m", " ", "123", "45", " apples", "!!\n\n", " ", " ok"}));
  EXPECT_EQ(splitPreTokens("qwen2", text),
            (V{"I", "'m", " ", "1", "2", "3", "4", "5", " apples", "!!\n\n",
               " ", " ok"}));
  EXPECT_EQ(splitPreTokens("gpt2", text),
            (V{"I", "'m", " 12345", " apples", "!!", "\n\n ", " ok"}));
  // Case-insensitive contractions in Llama 3 only.
  EXPECT_EQ(splitPreTokens("llama3", "WE'LL"), (V{"WE", "'LL"}));
  EXPECT_EQ(splitPreTokens("gpt2", "WE'LL"), (V{"WE", "'", "LL"}));
  // Trailing whitespace stays one piece; a newline run ends a piece.
  EXPECT_EQ(splitPreTokens("llama3", "a  \n b  "),
            (V{"a", "  \n", " b", "  "}));
  EXPECT_EQ(splitPreTokens("gpt2", "a  \n b  "), (V{"a", "  \n", " b", "  "}));
}

TEST(PreTokenizer, MatchesPythonRegex) {
  std::vector<std::string> texts = handTexts();
  for (std::string &t : fuzzTexts(11, 300))
    texts.push_back(std::move(t));
  for (const char *pattern : {"gpt2", "llama3", "qwen2"}) {
    std::vector<std::vector<std::string>> expected =
        referenceSplits(pattern, texts);
    ASSERT_EQ(expected.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) {
      std::vector<std::string> got;
      for (std::string_view p : splitPreTokens(pattern, texts[i]))
        got.emplace_back(p);
      EXPECT_EQ(got, expected[i]) << pattern << " on '" << texts[i] << "'";
    }
  }
}

TEST(Nfc, ComposesAndOrders) {
  EXPECT_EQ(normalizeNfc("cafe\u0301"), "caf\u00e9");
  EXPECT_EQ(normalizeNfc("\u1100\u1161\u11A8"), "\uAC01");
  // Combining marks are ordered by class before composing: dot below (220)
  // before circumflex (230); ệ is one code point.
  EXPECT_EQ(normalizeNfc("e\u0302\u0323"), "\u1EC7");
  // A composition exclusion stays decomposed; a singleton is replaced.
  EXPECT_EQ(normalizeNfc("\u0958"), "\u0915\u093C");
  EXPECT_EQ(normalizeNfc("\u212B"), "\u00C5");
  EXPECT_EQ(normalizeNfc("plain ascii"), "plain ascii");
  EXPECT_EQ(normalizeNfc("bad \xFF byte e\u0301"), "bad \xFF byte \u00e9");
}

TEST(BpeTokenizer, Gpt2MatchesReference) {
  expectMatchesReference(input("gpt2.json"));
}

TEST(BpeTokenizer, Llama3MatchesReference) {
  expectMatchesReference(input("llama3.json"));
}

TEST(BpeTokenizer, Qwen2FolderMatchesReference) {
  expectMatchesReference(input("qwen2/tokenizer.json"));
}

TEST(BpeTokenizer, AddPrefixSpaceMatchesReference) {
  std::string json = readFile(input("gpt2.json"));
  std::string from = "\"add_prefix_space\": false,\n  \"trim_offsets\": true";
  size_t at = json.find(from);
  ASSERT_NE(at, std::string::npos);
  json.replace(at, from.size(),
               "\"add_prefix_space\": true,\n  \"trim_offsets\": true");
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("prefix", "json", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << json;
  }
  expectMatchesReference(std::string(path));
  std::unique_ptr<BpeTokenizer> tok = load(std::string(path));
  std::unique_ptr<BpeTokenizer> plain = load(input("gpt2.json"));
  EXPECT_EQ(tok->encode("Hello"), plain->encode(" Hello"));
  llvm::sys::fs::remove(path);
}

TEST(BpeTokenizer, SpecialTokensAndIds) {
  std::unique_ptr<BpeTokenizer> tok = load(input("llama3.json"));
  ASSERT_TRUE(tok);
  std::optional<int64_t> bot = tok->tokenToId("<|begin_of_text|>");
  std::optional<int64_t> eot = tok->tokenToId("<|end_of_text|>");
  ASSERT_TRUE(bot && eot);
  // No tokenizer_config.json next to it: BOS and EOS by name.
  EXPECT_EQ(tok->bosId(), bot);
  EXPECT_EQ(tok->eosId(), eot);
  std::vector<int64_t> ids = tok->encode("Hi<|end_of_text|><|begin_of_text|>");
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[ids.size() - 2], *eot);
  EXPECT_EQ(ids.back(), *bot);
  // Added token ids follow the vocabulary; the vocabulary size counts them.
  EXPECT_EQ(tok->vocabSize(), *tok->tokenToId("<|eot_id|>") + 1);
  // ignore_merges: a pre-token that is a vocabulary word is that word,
  // though no merge builds it.
  std::optional<int64_t> word = tok->tokenToId("Ġlighthouse");
  ASSERT_TRUE(word);
  EXPECT_EQ(tok->encode(" lighthouse"), std::vector<int64_t>{*word});
  EXPECT_EQ(tok->preTokenizerPatterns(), std::vector<std::string>{"llama3"});
  // decode inverts encode.
  for (const std::string &t : handTexts())
    EXPECT_EQ(tok->decode(tok->encode(t)), t);
}

TEST(BpeTokenizer, BosEosFromTokenizerConfig) {
  // A folder: tokenizer.json and tokenizer_config.json (bos_token null,
  // eos_token {"content": "<|im_end|>"}), as torchtitan reads them.
  std::unique_ptr<BpeTokenizer> tok = load(input("qwen2"));
  ASSERT_TRUE(tok);
  EXPECT_EQ(tok->bosId(), std::nullopt);
  EXPECT_EQ(tok->eosId(), tok->tokenToId("<|im_end|>"));
  EXPECT_TRUE(tok->eosId().has_value());

  // A token the config names that the tokenizer lacks is added after the
  // others (torchtitan's add_special_tokens).
  std::string json = readFile(input("gpt2.json"));
  std::unique_ptr<BpeTokenizer> added;
  Status s = BpeTokenizer::parse(
      json,
      R"({"bos_token": "<|startoftext|>", "eos_token": "<|end_of_text|>"})",
      "x/tokenizer.json", added);
  ASSERT_TRUE(s.ok()) << s.getMessage();
  std::unique_ptr<BpeTokenizer> plain = load(input("gpt2.json"));
  EXPECT_EQ(added->bosId(), plain->vocabSize());
  EXPECT_EQ(added->vocabSize(), plain->vocabSize() + 1);
  EXPECT_EQ(added->eosId(), plain->tokenToId("<|end_of_text|>"));
  EXPECT_EQ(added->encode("<|startoftext|>"),
            std::vector<int64_t>{*added->bosId()});
}

/// A byte-level tokenizer.json with no merges and the given added tokens.
std::string
minimalJson(const std::string &addedTokens,
            const std::string &preTokenizer =
                R"({"type": "ByteLevel", "add_prefix_space": false})",
            const std::string &normalizer = "null",
            const std::string &modelType = "BPE") {
  static const std::string bytes = [] {
    llvm::json::Object vocab;
    // The byte-level characters, with id = byte value.
    int id = 0;
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? b : next++;
      std::string s;
      if (cp < 0x80) {
        s += char(cp);
      } else {
        s += char(0xC0 | (cp >> 6));
        s += char(0x80 | (cp & 0x3F));
      }
      vocab[s] = id++;
    }
    std::string out;
    llvm::raw_string_ostream os(out);
    os << llvm::json::Value(std::move(vocab));
    return out;
  }();
  return R"({"added_tokens": )" + addedTokens + R"(, "normalizer": )" +
         normalizer + R"(, "pre_tokenizer": )" + preTokenizer +
         R"(, "model": {"type": ")" + modelType + R"(", "vocab": )" + bytes +
         R"(, "merges": []}})";
}

TEST(BpeTokenizer, AddedTokenStripping) {
  auto make = [](bool lstrip, bool rstrip, bool singleWord) {
    std::string added = std::string(R"([{"id": 300, "content": "<mask>", )") +
                        R"("lstrip": )" + (lstrip ? "true" : "false") +
                        R"(, "rstrip": )" + (rstrip ? "true" : "false") +
                        R"(, "single_word": )" +
                        (singleWord ? "true" : "false") +
                        R"(, "normalized": false, "special": true}])";
    std::unique_ptr<BpeTokenizer> tok;
    Status s = BpeTokenizer::parse(minimalJson(added), "", "mini", tok);
    EXPECT_TRUE(s.ok()) << s.getMessage();
    return tok;
  };
  // In this vocabulary a byte's id is its value.
  int64_t a = 'a', space = ' ', mask = 300;
  EXPECT_EQ(make(false, false, false)->encode("a <mask> a"),
            (std::vector<int64_t>{a, space, mask, space, a}));
  EXPECT_EQ(make(true, false, false)->encode("a  <mask> a"),
            (std::vector<int64_t>{a, mask, space, a}));
  EXPECT_EQ(make(false, true, false)->encode("a <mask>  a"),
            (std::vector<int64_t>{a, space, mask, a}));
  // single_word: not inside a word.
  EXPECT_EQ(make(false, false, true)->encode("a<mask>"),
            (std::vector<int64_t>{a, '<', 'm', 'a', 's', 'k', '>'}));
  EXPECT_EQ(make(false, false, true)->encode("a <mask>"),
            (std::vector<int64_t>{a, space, mask}));
}

TEST(BpeTokenizer, Errors) {
  std::unique_ptr<BpeTokenizer> tok;
  // A missing path, a folder without tokenizer.json.
  Status s = BpeTokenizer::load(input("no-such-tokenizer.json"), tok);
  EXPECT_EQ(s.getCode(), TITANRT_ERROR_IO);
  EXPECT_NE(s.getMessage().find("no-such-tokenizer.json"), std::string::npos)
      << s.getMessage();
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("tokdir", dir));
  s = BpeTokenizer::load(std::string(dir), tok);
  EXPECT_EQ(s.getCode(), TITANRT_ERROR_IO);
  EXPECT_NE(s.getMessage().find("without tokenizer.json"), std::string::npos)
      << s.getMessage();

  // Malformed JSON, through a file: the message names the file.
  llvm::SmallString<128> file(dir);
  llvm::sys::path::append(file, "tokenizer.json");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(file, ec);
    os << "{\"model\": {\"type\": \"BPE\", ";
  }
  s = BpeTokenizer::load(std::string(dir), tok);
  EXPECT_EQ(s.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(s.getMessage().find(std::string(file)), std::string::npos)
      << s.getMessage();
  EXPECT_NE(s.getMessage().find("malformed JSON"), std::string::npos)
      << s.getMessage();
  std::unique_ptr<Tokenizer> any;
  EXPECT_FALSE(loadTokenizer(std::string(file), any).ok());
  llvm::sys::fs::remove(file);
  llvm::sys::fs::remove(dir);

  auto expectUnsupported = [](const std::string &json,
                              const std::string &needle) {
    std::unique_ptr<BpeTokenizer> t;
    Status st = BpeTokenizer::parse(json, "", "my/tokenizer.json", t);
    EXPECT_EQ(st.getCode(), TITANRT_ERROR_UNSUPPORTED) << st.getMessage();
    EXPECT_NE(st.getMessage().find(needle), std::string::npos)
        << st.getMessage();
    EXPECT_NE(st.getMessage().find("my/tokenizer.json"), std::string::npos)
        << st.getMessage();
  };
  expectUnsupported(
      minimalJson("[]", R"({"type": "Metaspace", "replacement": "▁"})"),
      "pre_tokenizer 'Metaspace'");
  expectUnsupported(
      minimalJson("[]",
                  R"({"type": "Sequence", "pretokenizers": [{"type": "Split",
                     "pattern": {"Regex": "\\w+|\\s+"}, "behavior": "Isolated",
                     "invert": false}, {"type": "ByteLevel",
                     "add_prefix_space": false, "use_regex": false}]})"),
      "Split regex '\\w+|\\s+'");
  expectUnsupported(
      minimalJson("[]", R"({"type": "ByteLevel"})", R"({"type": "Lowercase"})"),
      "normalizer 'Lowercase'");
  expectUnsupported(
      minimalJson("[]", R"({"type": "ByteLevel"})", "null", "WordPiece"),
      "model type 'WordPiece'");
  expectUnsupported(minimalJson("[]", "null"), "without a ByteLevel");

  // A merge of tokens the vocabulary lacks.
  std::string json = minimalJson("[]");
  json.replace(json.find("\"merges\": []"), 12, "\"merges\": [\"x yz\"]");
  s = BpeTokenizer::parse(json, "", "m.json", tok);
  EXPECT_EQ(s.getCode(), TITANRT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(s.getMessage().find("x yz"), std::string::npos) << s.getMessage();
}

TEST(BpeTokenizer, Speed) {
  std::unique_ptr<BpeTokenizer> tok = load(input("llama3.json"));
  ASSERT_TRUE(tok);
  std::string corpus = readFile(TITAN_CORPUS);
  std::string text;
  while (text.size() < (32u << 20))
    text += corpus;
  std::vector<int64_t> ids;
  auto start = std::chrono::steady_clock::now();
  std::clock_t cpuStart = std::clock();
  tok->encode(text, ids);
  double cpuSeconds = double(std::clock() - cpuStart) / CLOCKS_PER_SEC;
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double mbPerS = text.size() / cpuSeconds / 1e6;
  std::printf("[ speed    ] %.1f MB in %.2f s (%.2f s CPU): %.1f MB/s, "
              "%.2f M tokens/s\n",
              text.size() / 1e6, seconds, cpuSeconds, mbPerS,
              ids.size() / cpuSeconds / 1e6);
  // 100 MB well under a minute (CPU time: other processes do not count).
  EXPECT_GT(mbPerS, 5.0);
}
