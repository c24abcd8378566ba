// Settings › Chat defaults: what a new chat in the app starts with, kept by the core (the app's
// page origin changes with the core's port, so the browser's storage would forget them).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { defaultSettings } from "../../electron/core/api/settings.js";
import { applySettingsPatch, SettingsError } from "../../electron/core/store/settings.js";

describe("chatDefaults setting", () => {
  it("defaults to no system prompt, temperature 0.7, top-p 0.95, max tokens sized to the model", () => {
    assert.deepEqual(defaultSettings().chatDefaults, { systemPrompt: "", temperature: 0.7, topP: 0.95, maxTokens: null, toolSteps: 8 });
    assert.notEqual(defaultSettings().chatDefaults, defaultSettings().chatDefaults, "each settings object has its own");
  });

  it("takes a whole new value and refuses a bad field by name", () => {
    const next = applySettingsPatch(defaultSettings(), { chatDefaults: { systemPrompt: "Be brief.", temperature: 0.2, topP: 1, maxTokens: 512 } });
    assert.deepEqual(
      next.chatDefaults,
      { systemPrompt: "Be brief.", temperature: 0.2, topP: 1, maxTokens: 512, toolSteps: 8 },
      "saved before tool steps existed: the default",
    );
    assert.throws(
      () => applySettingsPatch(next, { chatDefaults: { ...next.chatDefaults, temperature: 3 } }),
      (e: Error) => e instanceof SettingsError && /chatDefaults\.temperature/.test(e.message),
    );
    assert.throws(() => applySettingsPatch(next, { chatDefaults: { ...next.chatDefaults, maxTokens: 0 } }), SettingsError);
    assert.equal(applySettingsPatch(next, { chatDefaults: { ...next.chatDefaults, maxTokens: 1 } }).chatDefaults.maxTokens, 1, "one token is a real use");
    assert.throws(() => applySettingsPatch(next, { chatDefaults: { ...next.chatDefaults, extra: 1 } }), SettingsError);
  });
});
