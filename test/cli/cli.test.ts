import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { runCli } from "../helpers/cli.js";

describe("clawrl CLI", () => {
  it("lists the subcommands with --help and exits 0", () => {
    const r = runCli(["--help"]);
    assert.equal(r.code, 0);
    for (const c of ["serve", "tiny-model", "inspect"]) assert.match(r.stdout, new RegExp(`\\b${c}\\b`));
  });

  it("rejects an unknown command with one line and exit 2", () => {
    const r = runCli(["frobnicate"]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim().split("\n").length, 1);
    assert.match(r.stderr, /unknown command 'frobnicate'/);
  });

  for (const cmd of ["serve", "tiny-model", "inspect"]) {
    it(`${cmd} --help prints its usage`, () => {
      const r = runCli([cmd, "--help"]);
      assert.equal(r.code, 0);
      assert.match(r.stdout, new RegExp(`^Usage: clawrl ${cmd}`));
    });
  }

  it("serve rejects a bad option and a bad port, backend, context, threads or GPU layers value in one line, non-zero", () => {
    for (const args of [
      ["serve", "--bogus"],
      ["serve", "--port", "x"],
      ["serve", "--port", "70000"],
      ["serve", "--gpu", "tpu"],
      ["serve", "--context", "x"],
      ["serve", "--threads", "0"],
      ["serve", "--gpu-layers", "many"],
    ]) {
      const r = runCli(args);
      assert.notEqual(r.code, 0, args.join(" "));
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/, "no stack trace");
    }
  });
});
