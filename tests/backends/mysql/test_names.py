"""Evaluation database names on MySQL fit the server's 64 characters even as a GRANT spells them."""

from __future__ import annotations

import pytest

from polysql.backends.mysql.backend import evaluation_database_name


@pytest.mark.parametrize(("dataset", "db_id"), [
    ("rewrite-mysql-core", "correlated-group-concat-to-join"),
    ("a_b_c_d_e_f_g_h_i_j", "k_l_m_n_o_p_q_r_s_t_u_v_w_x_y_z_1_2_3_4_5"),
    ("demo", "retail"),
])
def test_names_fit_when_underscores_are_escaped(dataset: str, db_id: str) -> None:
    name = evaluation_database_name(dataset, db_id)
    assert len(name.replace("_", "\\_")) <= 64
    assert name == evaluation_database_name(dataset, db_id)  # stable


def test_distinct_databases_keep_distinct_names() -> None:
    names = {evaluation_database_name("rewrite-mysql-core", f"case-{i}-with-a-long-descriptive-name")
             for i in range(50)}
    assert len(names) == 50
