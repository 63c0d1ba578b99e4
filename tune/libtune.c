/*
 * libtune.c - the public entry points that read a config: they hand the
 * trainer registry (trainers/) down to the engine, which knows no trainer.
 * This is the one place where the layers meet; everything else in tune.h is
 * implemented by the layer that owns it.
 */
#include "engine/study.h"
#include "trainers/trainer.h"

#include <string.h>

tune_status tune_study_new_from_json(const char *json, const char *source, tune_study **ret_study,
                                     tune_error *err)
{
    if (!json || !ret_study)
        return tunep_error_set(err, TUNE_EINVAL, "json and ret_study must not be NULL");
    return tunep_study_new_from_config(json, strlen(json), source, NULL, NULL,
                                       tunep_trainer_types(), ret_study, err);
}

tune_status tune_study_new_with_space_take(const char *json, tune_space *space,
                                           tune_study **ret_study, tune_error *err)
{
    if (!json || !space || !ret_study) {
        tune_space_free(space);
        return tunep_error_set(err, TUNE_EINVAL, "json, space and ret_study must not be NULL");
    }
    return tunep_study_new_from_config(json, strlen(json), NULL, NULL, space, tunep_trainer_types(),
                                       ret_study, err);
}

tune_status tune_study_new_from_file(const char *path, tune_study **ret_study, tune_error *err)
{
    if (!path || !ret_study)
        return tunep_error_set(err, TUNE_EINVAL, "path and ret_study must not be NULL");
    char *text;
    size_t len;
    tune_status st = tunep_config_read_file(path, &text, &len, err);
    if (st)
        return st;
    st = tunep_study_new_from_config(text, len, path, NULL, NULL, tunep_trainer_types(), ret_study,
                                     err);
    tunep_free(text);
    return st;
}

tune_status tune_study_resume(const char *dir, unsigned flags, tune_study **ret_study,
                              tune_error *err)
{
    return tunep_study_resume(dir, flags, tunep_trainer_types(), ret_study, err);
}
