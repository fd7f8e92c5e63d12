DROP TABLE IF EXISTS console_forms;
