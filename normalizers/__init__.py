"""polysql.normalizers"""
