/*
 * trainer.h - built-in objectives. Each implements tune_objective_fn on top of
 * the public trial API only, exactly as a user's objective would.
 */
#ifndef TUNE_TRAINER_H
#define TUNE_TRAINER_H

#include "tune.h"

struct tunep_synthetic_config;

/*
 * The synthetic trainer: a deterministic learning curve with a known optimum
 * (user_data is a const struct tunep_synthetic_config *). See synthetic.c.
 */
tune_status tunep_synthetic_objective(tune_trial *trial, void *user_data);

/* The synthetic curve without noise, for tests and benchmarks. */
double tunep_synthetic_curve(double lr, double weight_decay, double batch_size, double warmup,
                             int64_t iteration);

struct tunep_bert_trainer_config;
struct tunep_bert_trainer;

/*
 * The BERT fine-tuning trainer's shared state (tokenizer and datasets, loaded
 * by the first trial). cfg is borrowed for the trainer's lifetime;
 * concurrency divides the cores among trials. The objective's user_data is
 * the trainer. See bert_trainer.c.
 */
tune_status tunep_bert_trainer_new(const struct tunep_bert_trainer_config *cfg, int concurrency,
                                   struct tunep_bert_trainer **ret, tune_error *err);
void tunep_bert_trainer_free(struct tunep_bert_trainer *t);
/* Loads the vocabulary and datasets now, so data errors stop the run before any trial. */
tune_status tunep_bert_trainer_prepare(struct tunep_bert_trainer *t, tune_error *err);
tune_status tunep_bert_objective(tune_trial *trial, void *user_data);

#endif /* TUNE_TRAINER_H */
