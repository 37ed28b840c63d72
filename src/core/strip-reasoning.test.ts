import { describe, expect, it } from 'vitest';
import { stripReasoning } from './strip-reasoning.js';

describe('stripReasoning', () => {
  it('drops think blocks wherever they are, whatever their case', () => {
    expect(stripReasoning('<think>\nThe user likes tabs.\n</think>\n\nIMPORTANCE: 0.9\nUser prefers tabs.')).toBe(
      '\n\nIMPORTANCE: 0.9\nUser prefers tabs.',
    );
    expect(stripReasoning('A<THINKING>x</THINKING>B<reasoning>y</reasoning >C')).toBe('ABC');
  });

  it('drops what comes before a closing tag whose opening one the template sent', () => {
    expect(stripReasoning('the user may be joking\n</think>\nNONE')).toBe('\nNONE');
  });

  it('drops an opening tag never closed, and all after it', () => {
    expect(stripReasoning('IMPORTANCE: 0.5\nfact\n<think>\nand then I wonder')).toBe('IMPORTANCE: 0.5\nfact\n');
    expect(stripReasoning('<think>\nall thinking, cut off')).toBe('');
  });

  it('leaves other text and tags alone', () => {
    const text = 'IMPORTANCE: 0.5\nThe template uses <div> and </span> tags; "think" is a word.';
    expect(stripReasoning(text)).toBe(text);
  });
});
