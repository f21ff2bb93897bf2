// Sentences of typical narration length, shared by the GPU-server benches.
export const SENTENCES = [
  'The committee will meet again on Thursday to review the final budget proposal.',
  'She opened the window and listened to the rain falling on the quiet street below.',
  'Most of the early settlers arrived by boat after a long and difficult journey.',
  'Please make sure that every chapter has a title before you export the book.',
  'The results were surprising, and the team spent weeks checking the numbers again.',
  'A small village lay at the foot of the mountain, hidden by a thick forest.',
  'He explained the rules slowly, so that even the youngest players could follow.',
  'When the lights went out, the whole audience fell silent for a moment.',
];
