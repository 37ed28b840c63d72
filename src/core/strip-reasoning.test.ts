import { describe, expect, it } from 'vitest';
import { stripReasoning } from './strip-reasoning.js';

describe('stripReasoning', () => {
  it('drops leading think blocks, whatever their case', () => {
    expect(stripReasoning('<think>\nThe user likes tabs.\n</think>\n\nIMPORTANCE: 0.9\nUser prefers tabs.')).toBe(
      '\n\nIMPORTANCE: 0.9\nUser prefers tabs.',
    );
    expect(stripReasoning(' <THINKING>x</THINKING><reasoning>y</reasoning >C')).toBe('C');
  });

  it('drops what comes before a closing tag whose opening one the template sent', () => {
    expect(stripReasoning('the user may be joking\n</think>\nNONE')).toBe('\nNONE');
  });

  it('takes an answer that is only an opening tag and thinking as empty', () => {
    expect(stripReasoning('<think>\nall thinking, cut off')).toBe('');
  });

  it('keeps tags the answer itself mentions, anywhere after its start', () => {
    for (const text of [
      'IMPORTANCE: 0.5\nThe template uses <div> and </span> tags; "think" is a word.',
      "IMPORTANCE: 0.8\nUser's log pipeline strips <think> blocks before indexing.\n\nIMPORTANCE: 0.5\nUses Go.",
      'IMPORTANCE: 0.8\nThe parser drops text up to a </think> tag and keeps what follows.\nSOURCE: 5',
      'SUMMARY:\nThe answers use a schema with a <reasoning> field.\nSUPERSESSIONS:\n- [seq:2] replaces [seq:1]',
    ])
      expect(stripReasoning(text), text).toBe(text);
  });

  it('keeps a closing tag inside a sentence of an unscored answer as text (review finding 9)', () => {
    for (const text of [
      'User writes XML with </reasoning> elements in their config files.',
      'The user said their parser chokes on a stray </think> tag in model output.',
      'User notes that </thinking> appears in logs.\nThey want it filtered.',
      'User ends every template with </think>',
    ])
      expect(stripReasoning(text), text).toBe(text);
  });

  it('still drops thinking the template opened when its closing tag ends a line of its own or the thinking', () => {
    expect(stripReasoning('the user may be joking.</think>\n\nUser prefers tabs.')).toBe('\n\nUser prefers tabs.');
    expect(stripReasoning('weighing it\n  </reasoning >  \nUser prefers tabs.')).toBe('  \nUser prefers tabs.');
  });
});
