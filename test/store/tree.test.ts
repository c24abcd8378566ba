import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { Store } from "../../electron/core/store/store.js";
import { OUT, preTreeDataDir, T, UI } from "./fixtures/preTree.js";

describe("a data dir from before the conversation tree", () => {
  it("opens with nothing lost: every turn, next state and feedback kept, parents derived from the recorded messages", () => {
    const dir = preTreeDataDir();
    const before = fs.readFileSync(path.join(dir, "logs/trajectories.jsonl"));
    const store = Store.open(dir);
    try {
      assert.deepEqual(
        store.sessionTurns(UI).map((e) => [e.turnId, e.parentTurnId]),
        [
          [T.a, null],
          [T.b, T.a],
          [T.b2, T.a], // the regenerated answer: a sibling of b, not a repeated question
          [T.c, T.b2],
          [T.d, null], // the first question edited: a second root
        ],
      );
      assert.deepEqual(
        store.sessionTurns(OUT).map((e) => [e.turnId, e.parentTurnId]),
        [
          [T.o1, null],
          [T.o2, T.o1],
        ],
      );
      assert.equal(store.turnView(T.a).feedback?.thumbs, "up");
      assert.deepEqual(store.readNextState(T.a), [{ role: "user", content: "And a badger?" }]);
      assert.deepEqual(store.readNextState(T.b2), [{ role: "user", content: "Which one digs?" }]);
      assert.equal(store.session(UI)?.title, "Foxes");
      assert.equal(store.turnView(T.c).parentTurnId, T.b2);
      // No choice made: the branch shown ends at the latest turn (the edited first question).
      assert.deepEqual(store.activePath(UI), [T.d]);
      assert.deepEqual(
        store.childrenOf(T.a).map((e) => e.turnId),
        [T.b, T.b2],
      );
    } finally {
      store.close();
    }
    // Derived in memory: the log is as it was, and a read-only open derives the same tree.
    assert.deepEqual(fs.readFileSync(path.join(dir, "logs/trajectories.jsonl")), before);
    const ro = Store.open(dir, { readOnly: true });
    try {
      assert.equal(ro.turnEntry(T.c)?.parentTurnId, T.b2);
    } finally {
      ro.close();
    }
  });

  it("the chosen branch: an inner turn follows its latest child; the choice is kept across a reopen; a later turn wins", () => {
    const dir = preTreeDataDir();
    let store = Store.open(dir);
    try {
      assert.deepEqual(store.setActiveBranch(UI, T.a), [T.a, T.b2, T.c]);
      assert.deepEqual(store.setActiveBranch(UI, T.b), [T.a, T.b]);
    } finally {
      store.close();
    }
    store = Store.open(dir);
    try {
      assert.deepEqual(store.activePath(UI), [T.a, T.b]);
      // a turn recorded after the choice is shown instead (the conversation went on elsewhere)
      const rec = store.readTurn(T.d);
      const later = new Date(Date.now() + 1000).toISOString();
      store.appendTurn({ ...rec, turnId: "e-1", index: store.nextTurnIndex(UI), time: later, prefixKey: "k-e1", parentTurnId: T.d });
      assert.deepEqual(store.activePath(UI), [T.d, "e-1"]);
      assert.throws(() => store.setActiveBranch(OUT, T.a), /unknown turn/);
    } finally {
      store.close();
    }
  });

  it("deletes a turn and its branch with one appended line; the rest of the tree stays, after a reopen too", () => {
    const dir = preTreeDataDir();
    let store = Store.open(dir);
    try {
      assert.deepEqual(store.deleteTurn(T.b2), [T.b2, T.c]);
      assert.deepEqual(
        store.sessionTurns(UI).map((e) => e.turnId),
        [T.a, T.b, T.d],
      );
      assert.equal(store.session(UI)?.turnCount, 3);
      assert.equal(store.turnEntry(T.c), undefined);
      // deleted turns keep their indexes: the next turn gets a new one
      assert.equal(store.nextTurnIndex(UI), 5);
    } finally {
      store.close();
    }
    store = Store.open(dir);
    try {
      assert.deepEqual(
        store.sessionTurns(UI).map((e) => e.turnId),
        [T.a, T.b, T.d],
      );
      assert.equal(store.session(UI)?.turnCount, 3);
      store.setActiveBranch(UI, T.a);
      assert.deepEqual(store.activePath(UI), [T.a, T.b]);
    } finally {
      store.close();
    }
  });

  it("a crash mid-write of a branch (a torn last line) loses nothing that was whole", () => {
    const dir = preTreeDataDir();
    const log = path.join(dir, "logs/trajectories.jsonl");
    let store = Store.open(dir);
    const rec = store.readTurn(T.b);
    store.close();
    // A regenerated answer's line, cut by the crash.
    const torn = JSON.stringify({ ...rec, turnId: "torn-1", index: 5, prefixKey: "k-torn", parentTurnId: T.a }).slice(0, 200);
    fs.appendFileSync(log, torn);
    store = Store.open(dir);
    try {
      assert.ok(store.recoveryMessage);
      assert.equal(store.turnEntry("torn-1"), undefined);
      assert.deepEqual(
        store.childrenOf(T.a).map((e) => e.turnId),
        [T.b, T.b2],
      );
      assert.equal(store.sessionTurns(UI).length, 5);
      // the branch is written again after recovery, on a line of its own
      store.appendTurn({ ...rec, turnId: "again-1", index: store.nextTurnIndex(UI), prefixKey: "k-again", parentTurnId: T.a });
    } finally {
      store.close();
    }
    store = Store.open(dir);
    try {
      assert.deepEqual(
        store.childrenOf(T.a).map((e) => e.turnId),
        [T.b, T.b2, "again-1"],
      );
      assert.equal(store.recovery.corrupt.length, 0);
    } finally {
      store.close();
    }
  });
});
