/**
 * The one shape every eval dataset is read into: conversations of dated sessions, and the
 * questions asked about them.
 * @module
 */
/** The file formats an eval reads, detected from the parsed JSON. */
export type EvalDatasetFormat = 'longmemeval' | 'locomo';

/** The question types of LongMemEval; abstention instances are marked by a `_abs` id instead. */
export const LONGMEMEVAL_QUESTION_TYPES: readonly string[] = [
  'single-session-user',
  'single-session-assistant',
  'single-session-preference',
  'knowledge-update',
  'temporal-reasoning',
  'multi-session',
];

/** One message of a session, ready to hand to observational memory. */
export interface EvalMessage {
  /** Stable within the conversation: `s<session number in the file>m<turn number>`, from 1. */
  readonly id: string;
  /** LoCoMo's `speaker_a` is the user and `speaker_b` the assistant. */
  readonly role: 'user' | 'assistant';
  /** The text; LoCoMo turns read `Caroline: …`, with an image's caption on a line of its own. */
  readonly content: string;
}

/** One session of a conversation. */
export interface EvalSession {
  /** LongMemEval's `haystack_session_ids` entry (or `session_<n>`), LoCoMo's `session_<n>`. */
  readonly id: string;
  /** The date as the file writes it, or `null` when it gives none. */
  readonly date: string | null;
  /** The date in milliseconds since the epoch, read as UTC; `null` when missing or unreadable. */
  readonly timestamp: number | null;
  readonly messages: readonly EvalMessage[];
}

/** One question to ask after the conversation's sessions are remembered. */
export interface EvalQuestion {
  /** LongMemEval's `question_id`; for LoCoMo `<sample_id>:q<N>`, N counting QA items from 1. */
  readonly questionId: string;
  /** LongMemEval's `question_type`; for LoCoMo `category-<N>`. */
  readonly questionType: string;
  readonly question: string;
  /**
   * The gold answer as text (numbers become text); for preference questions a rubric. May be empty for LoCoMo
   * category 5.
   */
  readonly answer: string;
  /** When the question is asked, as the file writes it; LoCoMo: the last session's date. */
  readonly questionDate: string | null;
  readonly questionTimestamp: number | null;
  /** Sessions holding the evidence (LongMemEval `answer_session_ids`, LoCoMo `evidence`). */
  readonly answerSessionIds?: readonly string[];
  /** True when the right response is that the information is not available (`_abs`, LoCoMo category 5). */
  readonly abstention: boolean;
  /** LoCoMo's category, 1 to 5. */
  readonly category?: number;
  /** LoCoMo category 5: the tempting wrong answer. */
  readonly adversarialAnswer?: string;
}

/** The sessions to remember, once, and the questions to ask about them. */
export interface EvalConversation {
  /** LongMemEval's `question_id` (one conversation per instance), LoCoMo's `sample_id`. */
  readonly id: string;
  /** Position of the instance in the file, from 0. */
  readonly index: number;
  /**
   * In date order, stably; a session without a readable date keeps its position. Empty when
   * `lazy`: the dataset's `loadSessions` reads them.
   */
  readonly sessions: readonly EvalSession[];
  readonly questions: readonly EvalQuestion[];
  /**
   * A digest of the sessions as read (ids, dates, turns), taken when the dataset is read, so also for a `lazy`
   * conversation: a resume refuses results of the same questions over another haystack (LongMemEval's `_s`, `_m`
   * and `_oracle` files share their questions). Absent only on conversations built by hand.
   */
  readonly sessionsDigest?: string;
  /** True when the sessions are still in the file (a large dataset): read them with the dataset's `loadSessions`. */
  readonly lazy?: boolean;
}

/** A date that is missing or cannot be read. The dataset is usable; the runner shows these. */
export interface EvalDatasetProblem {
  readonly index: number;
  readonly id: string;
  /** The field path, such as `haystack_dates[2]` or `conversation.session_4_date_time`. */
  readonly field: string;
  /** The whole sentence, naming the instance and the field. */
  readonly message: string;
}

/** A dataset in the one shape the eval runs on. */
export interface EvalDataset {
  readonly format: EvalDatasetFormat;
  readonly conversations: readonly EvalConversation[];
  /** Missing or unreadable dates; empty when the dataset gives no dates at all. */
  readonly problems: readonly EvalDatasetProblem[];
  /**
   * Reads the sessions of a conversation marked `lazy`. Present when the dataset was read
   * from a file too large to hold whole ({@link EvalDatasetFile}): its conversations keep
   * their questions in memory and read their sessions from the file when they are evaluated.
   */
  readonly loadSessions?: (conversation: EvalConversation) => Promise<readonly EvalSession[]>;
}
