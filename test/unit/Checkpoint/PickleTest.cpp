//===- PickleTest.cpp - Restricted pickle reader and writer ---------------===//

#include "titan/Checkpoint/Pickle.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace mlir::titan;

namespace {

std::string render(const PickleRef &value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  value->print(os);
  return text;
}

TEST(PickleTest, RoundTripsEveryKind) {
  PickleRef shared = PickleValue::list({PickleValue::integer(7)});
  PickleRef object =
      PickleValue::object(PickleValue::global("collections", "OrderedDict"),
                          PickleValue::tuple({}), /*newObj=*/true);
  object->setState(PickleValue::dict(
      {{PickleValue::string("x"), PickleValue::floating(-2.5)}}));
  PickleRef root = PickleValue::tuple(
      {PickleValue::none(), PickleValue::boolean(true),
       PickleValue::boolean(false), PickleValue::integer(0),
       PickleValue::integer(255), PickleValue::integer(65535),
       PickleValue::integer(-1), PickleValue::integer(1ll << 40),
       PickleValue::integer(INT64_MIN), PickleValue::string("caf\xc3\xa9"),
       PickleValue::bytes(std::string("\0\x01", 2)), shared, shared,
       PickleValue::dict({}), object,
       PickleValue::persistentId(PickleValue::tuple(
           {PickleValue::string("storage"), PickleValue::integer(3)}))});
  std::string bytes = writePickle(root);
  llvm::Expected<PickleRef> read =
      readPickle(bytes, "test", checkpointPickleGlobals());
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(render(*read), render(root));
  // A node written twice is read back as one shared node.
  const auto &items = (*read)->getItems();
  EXPECT_EQ(items[11], items[12]);
  // Writing what was read gives the same bytes.
  EXPECT_EQ(writePickle(*read), bytes);
}

TEST(PickleTest, ReadsProtocol4Opcodes) {
  // pickle.dumps({'a': (1, 'b')}, protocol=4) with FRAME, MEMOIZE,
  // SHORT_BINUNICODE and TUPLE2.
  std::string bytes("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94\x8c"
                    "\x01"
                    "a\x94K\x01\x8c\x01"
                    "b\x94\x86\x94s.",
                    27);
  llvm::Expected<PickleRef> read =
      readPickle(bytes, "test", checkpointPickleGlobals());
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  EXPECT_EQ(render(*read), "{'a': (1, 'b')}");
}

TEST(PickleTest, RefusesGlobalsOutsideTheAllowList) {
  // pickle.dumps of an object whose __reduce__ returns (os.system, ('id',)).
  std::string bytes = "\x80\x02"
                      "cposix\nsystem\nq\x00X\x02\x00\x00\x00idq"
                      "\x01\x85q\x02Rq\x03.";
  llvm::Expected<PickleRef> read =
      readPickle(bytes, "evil.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  std::string message = llvm::toString(read.takeError());
  EXPECT_NE(message.find("evil.pkl"), std::string::npos) << message;
  EXPECT_NE(message.find("'posix.system'"), std::string::npos) << message;

  std::string stackGlobal = "\x80\x04\x8c\x08"
                            "builtins\x8c\x04"
                            "eval\x93.";
  read = readPickle(stackGlobal, "evil.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  message = llvm::toString(read.takeError());
  EXPECT_NE(message.find("'builtins.eval'"), std::string::npos) << message;
}

TEST(PickleTest, ReportsTruncationAndUnknownOpcodes) {
  std::string bytes = writePickle(PickleValue::string("hello"));
  llvm::Expected<PickleRef> read = readPickle(
      llvm::StringRef(bytes).drop_back(3), "t.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("truncated"),
            std::string::npos);

  read = readPickle("\x80\x02Z.", "t.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("unsupported pickle opcode"),
            std::string::npos);
}

TEST(PickleTest, ReadsProtocolZeroText) {
  // (True, 5L, 'a\'b\x41', u'\u00e9', 1.5, memo GET of the tuple's first
  // item): MARK INT LONG STRING UNICODE FLOAT PUT/GET TUPLE STOP.
  llvm::Expected<PickleRef> read =
      readPickle("(I01\np0\nL5L\nS'a\\'b\\x41'\nV\\u00e9\nF1.5\ng0\nt.",
                 "t.pkl", checkpointPickleGlobals());
  ASSERT_TRUE(bool(read)) << llvm::toString(read.takeError());
  auto &items = (*read)->getItems();
  ASSERT_EQ(items.size(), 6u);
  EXPECT_TRUE(items[0]->is(PickleValue::Kind::Bool));
  EXPECT_EQ(items[1]->getInt(), 5);
  EXPECT_EQ(items[2]->getString(), "a'bA");
  EXPECT_EQ(items[3]->getString(), "\xc3\xa9");
  EXPECT_EQ(items[4]->getFloat(), 1.5);
  EXPECT_EQ(items[5], items[0]);
  // Text memo indices outside LONG_BINPUT's range are refused (found by
  // the pickle fuzzer: -1 is DenseMap's empty key).
  for (const char *bad : {"Np-1\n.", "Np4294967296\n.", "Ng-2\n."}) {
    read = readPickle(bad, "t.pkl", checkpointPickleGlobals());
    ASSERT_FALSE(bool(read)) << bad;
    EXPECT_NE(llvm::toString(read.takeError()).find("out of range"),
              std::string::npos);
  }
  // A malformed quoted string names itself.
  read = readPickle("S'abc\n.", "t.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("malformed STRING"),
            std::string::npos);
}

TEST(PickleTest, RefusesCyclesAndDeepNesting) {
  // A list that contains itself: EMPTY_LIST BINPUT 0 BINGET 0 APPEND STOP.
  llvm::Expected<PickleRef> read =
      readPickle(llvm::StringRef("\x80\x02]q\x00h\x00a.", 9), "cycle.pkl",
                 checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("cycle"), std::string::npos);

  // 100000 nested lists: refused, and taken apart without deep recursion.
  std::string deep =
      "\x80\x02" + std::string(100000, ']') + std::string(99999, 'a') + ".";
  read = readPickle(deep, "deep.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("nested more than 1000"),
            std::string::npos);
  // The same cut short is refused as truncated, also without recursion.
  read = readPickle(llvm::StringRef(deep).drop_back(1), "deep.pkl",
                    checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("truncated"),
            std::string::npos);
}

TEST(PickleTest, BoundsTheExpansionOfSharedObjects) {
  // One list of 1000 ints referenced 5000 times (memo GET): about 30 KB of
  // pickle that a consumer walking it expands to 5 million values.
  std::vector<PickleRef> ints;
  for (int64_t i = 0; i < 1000; ++i)
    ints.push_back(PickleValue::integer(i + 1000));
  PickleRef shared = PickleValue::list(std::move(ints));
  std::vector<PickleRef> references(5000, shared);
  std::string bomb = writePickle(PickleValue::list(std::move(references)));
  ASSERT_LT(bomb.size(), 40000u);
  llvm::Expected<PickleRef> read =
      readPickle(bomb, "bomb.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  std::string message = llvm::toString(read.takeError());
  EXPECT_NE(message.find("'bomb.pkl'"), std::string::npos) << message;
  EXPECT_NE(message.find("expands to more than " +
                         std::to_string(maxPickleExpansion(bomb.size()))),
            std::string::npos)
      << message;

  // A tuple of one long string shared as often: the string's bytes count.
  std::vector<PickleRef> names(
      5000, PickleValue::tuple({PickleValue::string(std::string(1000, 'x'))}));
  std::string strings = writePickle(PickleValue::list(std::move(names)));
  ASSERT_LT(strings.size(), 20000u);
  read = readPickle(strings, "strings.pkl", checkpointPickleGlobals());
  ASSERT_FALSE(bool(read));
  EXPECT_NE(llvm::toString(read.takeError()).find("expands to more than"),
            std::string::npos);

  // Sharing within the limit (as checkpoints share globals and small
  // objects) is accepted.
  std::vector<PickleRef> few(100, shared);
  read = readPickle(writePickle(PickleValue::list(std::move(few))), "few.pkl",
                    checkpointPickleGlobals());
  EXPECT_TRUE(bool(read)) << llvm::toString(read.takeError());
}

} // namespace
