// The independent tokenizer the tests compare tgc's ids with:
// @lenml/tokenizers (a dependency-free fork of transformers.js's
// tokenizers), run on the same tokenizer.json.
//
//   node oracle.mjs encode DIR FILE [--add-special-tokens]   ids, one line
//   node oracle.mjs decode DIR FILE                          text
//   node oracle.mjs time DIR FILE                            MB/s of encode
import { readFileSync } from "node:fs";
import { TokenizerLoader } from "@lenml/tokenizers";

const [mode, dir, file, flag] = process.argv.slice(2);
const read = (name) => JSON.parse(readFileSync(`${dir}/${name}`, "utf8"));
let config = {};
try {
  config = read("tokenizer_config.json");
} catch {}
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: read("tokenizer.json"),
  tokenizerConfig: config,
});
const input = readFileSync(file, "utf8");
if (mode === "encode") {
  const ids = tokenizer.encode(input, {
    add_special_tokens: flag === "--add-special-tokens",
  });
  process.stdout.write(ids.join(" ") + "\n");
} else if (mode === "decode") {
  const ids = input.trim().split(/\s+/).filter(Boolean).map(Number);
  process.stdout.write(tokenizer.decode(ids, { skip_special_tokens: false,
                                               clean_up_tokenization_spaces: false }));
} else if (mode === "time") {
  const start = process.hrtime.bigint();
  tokenizer.encode(input, { add_special_tokens: false });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  process.stdout.write(`${(Buffer.byteLength(input) / 1e6 / seconds).toFixed(2)}\n`);
} else {
  console.error("usage: node oracle.mjs encode|decode|time DIR FILE");
  process.exit(2);
}
